-- Shared by the headless Neovim scripts of tests/editors/test_neovim*.py.
--
-- The Python test writes a JSON config ($AGENT_HOST_TEST_CONFIG: root, store,
-- script, python, out) and reads back the observations this writes to `out`
-- as JSON after every record(), so a failure still shows how far it got.
-- Every wait is bounded.
local H = {}

local function read(path)
  local fd = assert(io.open(path, "rb"))
  local data = fd:read("*a")
  fd:close()
  return data
end

local function write(path, data)
  local fd = assert(io.open(path, "wb"))
  fd:write(data)
  fd:close()
end

H.read = read
H.write = write
H.cfg = vim.json.decode(read(assert(os.getenv("AGENT_HOST_TEST_CONFIG"), "AGENT_HOST_TEST_CONFIG is not set")))
H.obs = { steps = {} }

function H.flush()
  write(H.cfg.out, vim.json.encode(H.obs))
end

function H.record(key, value)
  H.obs[key] = value == nil and vim.NIL or value
  H.flush()
end

function H.step(name)
  table.insert(H.obs.steps, name)
  H.flush()
end

function H.fail(msg)
  H.obs.error = msg
  H.flush()
  error(msg, 0)
end

--- Wait (bounded) until cond() is truthy; fail naming `what` otherwise.
function H.wait(what, ms, cond)
  local ok = vim.wait(ms, function()
    local good, value = pcall(cond)
    return good and value
  end, 20)
  if not ok then
    H.fail(("timed out after %d ms waiting for %s"):format(ms, what))
  end
end

-- vim.ui stubs: answers queued by the script, every question recorded.
H.questions = {}
H.answers = {} -- queue of fun(items, opts) -> item|nil (or false: never answer)

vim.ui.select = function(items, opts, on_choice)
  local shown = {}
  for _, item in ipairs(items) do
    table.insert(shown, opts.format_item and opts.format_item(item) or tostring(item))
  end
  local q = { kind = opts.kind or vim.NIL, prompt = opts.prompt or vim.NIL, items = shown }
  table.insert(H.questions, q)
  local answer = table.remove(H.answers, 1)
  if answer == nil then
    H.fail("unexpected vim.ui.select: " .. vim.inspect(q))
  end
  local choice = answer(items, opts, q)
  if choice == false then
    return -- left open
  end
  q.chosen = choice and (opts.format_item and opts.format_item(choice) or tostring(choice)) or vim.NIL
  on_choice(choice)
end

vim.ui.input = function(opts, on_confirm)
  local answer = table.remove(H.answers, 1)
  if answer == nil then
    H.fail("unexpected vim.ui.input: " .. vim.inspect(opts))
  end
  table.insert(H.questions, { kind = "input", prompt = opts.prompt or vim.NIL })
  on_confirm(answer(nil, opts))
end

--- Queue an answer that picks the first item for which pred(item) is true.
function H.answer(pred)
  table.insert(H.answers, function(items)
    for _, item in ipairs(items) do
      if pred(item) then
        return item
      end
    end
    H.fail("no item to pick among " .. vim.inspect(items))
  end)
end

function H.answer_value(value)
  H.answer(function(item)
    return item == value
  end)
end

--- The plugin set up against the real server with the test's options.
function H.setup(extra)
  local opts = {
    cmd = { H.cfg.python, "-m", "agent_host", "serve" },
    model = "scripted:" .. H.cfg.script,
    store = H.cfg.store,
    approval = "auto",
  }
  for k, v in pairs(extra or {}) do
    opts[k] = v
  end
  local agent = require("agent_host")
  agent.setup(opts)
  return agent
end

function H.instance()
  local client = require("agent_host.client")
  return client.instances[client.root_for(0)]
end

function H.wait_ready(ms)
  H.wait("the server to initialize", ms or 15000, function()
    local inst = H.instance()
    return inst and inst.ready and require("agent_host.client").client(inst) ~= nil
  end)
end

function H.wait_idle(what, ms)
  H.wait(what, ms or 20000, function()
    local inst = H.instance()
    return inst and inst.turn == nil and inst.busy == nil
  end)
end

function H.lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

function H.chat_text()
  local inst = H.instance()
  if not inst or not inst.chat_buf then
    return ""
  end
  return table.concat(H.lines(inst.chat_buf), "\n")
end

--- Wait for the restore preview float, record what it shows under `key`
--- (when given), then type `keys` in it (default <CR>: restore the ticked files).
function H.in_preview(keys, key)
  local preview = require("agent_host.preview")
  H.wait("the restore preview", 15000, function()
    return preview.showing ~= nil and vim.api.nvim_get_current_win() == preview.showing.win
  end)
  local view = preview.showing
  if key then
    H.record(key, {
      lines = H.lines(view.buf),
      files = view.files,
      float = vim.api.nvim_win_get_config(view.win).relative ~= "",
    })
  end
  vim.api.nvim_feedkeys(vim.keycode(keys or "<CR>"), "mx", false)
  return view
end

--- Stop the servers and wait (bounded) for them to exit.
function H.stop()
  require("agent_host").stop()
  H.wait("the server to exit", 10000, function()
    return #vim.lsp.get_clients({ name = "agent-host" }) == 0
  end)
end

function H.done()
  H.obs.questions = H.questions
  H.obs.ok = true
  H.flush()
  pcall(H.stop)
end

return H
