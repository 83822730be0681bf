-- Drives the real, unmodified CodeCompanion.nvim (19.22.0) in headless Neovim
-- against a real `agent-host acp`, the way a user would: the edited file open in
-- a buffer, a chat on an ACP adapter, prompts typed into the chat and ACP slash
-- commands typed with CodeCompanion's `\` trigger.
--
-- Run by tests/editors/codecompanion_harness.py as `nvim --headless --clean -l
-- driver.lua`; $AGENT_HOST_CC_CONFIG names a JSON file:
--   clients  the unpacked archive (codecompanion.nvim/ and plenary.nvim/)
--   command  the agent command (argv) for the adapter's commands.default
--   out      where to write the observations (JSON)
--   actions  what to do, in order (see ACTIONS below)
-- Every wait is bounded; the observations say how far it got.

local api = vim.api
local cfg = vim.json.decode(table.concat(vim.fn.readfile(os.getenv("AGENT_HOST_CC_CONFIG")), "\n"))

vim.opt.runtimepath:prepend(cfg.clients .. "/plenary.nvim")
vim.opt.runtimepath:prepend(cfg.clients .. "/codecompanion.nvim")
vim.o.swapfile = false

local WAIT_MS = cfg.wait_ms or 20000
local observed = { ok = false, results = {} }

local function save()
  local f = assert(io.open(cfg.out, "w"))
  f:write(vim.json.encode(observed))
  f:close()
end

-- The adapter, as docs/acp.md gives it: CodeCompanion's own goose adapter (a plain
-- ACP adapter: no auth handler, fs read and write offered) renamed, with
-- agent-host's command.
require("codecompanion").setup({
  adapters = {
    acp = {
      agent_host = function()
        return require("codecompanion.adapters").extend("goose", {
          name = "agent_host",
          formatted_name = "agent-host",
          commands = { default = cfg.command },
        })
      end,
    },
  },
  interactions = { chat = { adapter = "agent_host" } },
  opts = { log_level = "DEBUG" },
})

-- Observe (without changing) what reaches CodeCompanion's fs/write_text_file: the
-- disk's text just before it, so a test sees whether the agent wrote the disk first.
local fs = require("codecompanion.interactions.chat.acp.fs")
local writes = {}
local original_write = fs.write_text_file
fs.write_text_file = function(path, content)
  local before = vim.fn.filereadable(path) == 1 and table.concat(vim.fn.readfile(path, "b"), "\n") or nil
  local ok, err = original_write(path, content)
  local why = err and tostring(err):sub(1, 300) or nil
  table.insert(writes, { path = path, content = content, disk_before = before, ok = ok == true, error = why })
  return ok, err
end

-- What CodeCompanion tells the user (its log's WARN and ERROR go to vim.notify).
local notified = {}
local original_notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(notified, { message = tostring(msg), level = level or vim.log.levels.INFO })
  return original_notify(msg, level, opts)
end

local function errors_since(first)
  local found = {}
  for i = first, #notified do
    if notified[i].level >= vim.log.levels.ERROR then
      table.insert(found, notified[i].message)
    end
  end
  return found
end

local function read_disk(path)
  local f = io.open(path, "rb")
  if not f then
    return vim.NIL
  end
  local text = f:read("*a")
  f:close()
  return text
end

local function buffer_text(path)
  local bufnr = vim.fn.bufnr(path)
  if bufnr == -1 then
    return vim.NIL
  end
  -- the text a save would write: the lines, and the final newline 'eol' adds
  local text = table.concat(api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
  return text .. (vim.bo[bufnr].eol and "\n" or "")
end

local function command_names(bufnr)
  local names = {}
  for _, cmd in ipairs(require("codecompanion.interactions.chat.acp.commands").get_commands_for_buffer(bufnr)) do
    table.insert(names, cmd.name)
  end
  table.sort(names)
  return names
end

local chat
local last_reply = ""

local function wait(ms, predicate)
  return vim.wait(ms, predicate, 10)
end

local ACTIONS = {}

-- Open a file in a buffer (the editor's current window).
function ACTIONS.edit(a)
  vim.cmd.edit(vim.fn.fnameescape(a.path))
  return { bufnr = api.nvim_get_current_buf() }
end

-- A chat on the agent-host adapter: connected, with a session, and (within
-- commands_ms) the session's slash commands offered for the chat's buffer.
function ACTIONS.open_chat(a)
  local first_notice = #notified + 1
  chat = require("codecompanion").chat()
  -- connected, or CodeCompanion reported why not
  wait(WAIT_MS, function()
    return (chat.acp_connection ~= nil and chat.acp_connection.session_id ~= nil) or #errors_since(first_notice) > 0
  end)
  local connected = chat.acp_connection ~= nil and chat.acp_connection.session_id ~= nil
  local offered = connected
    and wait(a.commands_ms or 5000, function()
      return #command_names(chat.bufnr) > 0
    end)
  return {
    connected = connected,
    session = connected and chat.acp_connection.session_id or vim.NIL,
    commands = command_names(chat.bufnr),
    offered = offered,
    errors = errors_since(first_notice),
    -- what CodeCompanion's completion would list after the `\` trigger
    completion = vim.tbl_map(function(item)
      return item.label
    end, require("codecompanion.providers.completion").acp_commands(chat.bufnr)),
  }
end

-- Close the chat: CodeCompanion sends its agent SIGTERM (not waited for: the
-- next chat starts its own agent).
function ACTIONS.close_chat()
  chat:close()
  chat = nil
  return {}
end

-- Type `text` into the chat and submit it; wait for the turn to end.
function ACTIONS.say(a)
  local first_write, first_notice = #writes + 1, #notified + 1
  local text = a.text
  if a.fill then
    -- a value the previous reply gave (a checkpoint's seq), as a user would copy it
    local value = last_reply:match(a.fill)
    assert(value, ("no %q in the previous reply: %s"):format(a.fill, last_reply))
    text = text:format(value)
  end
  local before = api.nvim_buf_line_count(chat.bufnr)
  chat:add_buf_message({ role = "user", content = text })
  chat:submit()
  local started = chat.current_request ~= nil
  local done = wait(a.wait_ms or WAIT_MS, function()
    return chat.current_request == nil
  end)
  local reply = table.concat(api.nvim_buf_get_lines(chat.bufnr, before, -1, false), "\n")
  last_reply = reply
  return {
    sent = text,
    errors = errors_since(first_notice),
    started = started,
    done = done,
    status = chat.status,
    reply = reply,
    writes = vim.list_slice(writes, first_write),
  }
end

-- A user's own edit: the buffer's lines replaced and saved, as typing and :w would.
function ACTIONS.user_edit(a)
  local bufnr = vim.fn.bufnr(a.path)
  api.nvim_buf_set_lines(bufnr, 0, -1, false, a.lines)
  api.nvim_buf_call(bufnr, function()
    vim.cmd("silent write")
  end)
  return {}
end

-- The user (or a plugin) vetoes saving this buffer: every write of it fails.
function ACTIONS.refuse_writes(a)
  api.nvim_create_autocmd("BufWritePre", {
    pattern = vim.fn.fnamemodify(a.path, ":p"),
    callback = function()
      error("the test refuses this write")
    end,
  })
  return {}
end

-- A quiet period, then look: CodeCompanion's file watcher reloads a buffer 500 ms
-- (debounced) after its file changes on disk, and that late reload is part of what
-- the user ends up with. No event says "nothing more will come".
function ACTIONS.settle(a)
  vim.wait(a.ms or 700, function()
    return false
  end, 20)
  return {}
end

local ok, err = xpcall(function()
  for i, a in ipairs(cfg.actions) do
    local started_at = vim.uv.hrtime()
    local result = ACTIONS[a["do"]](a)
    result["do"] = a["do"]
    result.ms = math.floor((vim.uv.hrtime() - started_at) / 1e6)
    if a.path then
      result.disk = read_disk(a.path)
      result.buffer = buffer_text(a.path)
      local bufnr = vim.fn.bufnr(a.path)
      if bufnr ~= -1 then
        result.modified = vim.bo[bufnr].modified
      end
    end
    for _, path in ipairs(a.look or {}) do
      result.files = result.files or {}
      result.files[path] = { disk = read_disk(path), buffer = buffer_text(path) }
    end
    observed.results[i] = result
    save()
  end
end, debug.traceback)

observed.ok = ok
observed.error = ok and vim.NIL or err
save()
if chat and chat.acp_connection and chat.acp_connection._state.handle then
  pcall(function()
    chat.acp_connection:disconnect()
  end)
end
vim.cmd("qall!")
