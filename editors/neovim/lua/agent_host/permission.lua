-- session/requestPermission: may the agent run this tool call?
--
-- Answered with vim.ui.select (so dressing.nvim, telescope-ui-select, fzf-lua
-- ... show it their way). For edits the diff is shown in a floating window
-- while the question is open. Neovim runs server requests in a coroutine, so
-- the handler waits for the choice without blocking the editor.
local M = {}

M.labels = {
  allow_once = "Allow once",
  allow_always = "Allow always (this tool, this session)",
  reject_once = "Reject",
  reject_always = "Reject always (this tool, this session)",
}

local ORDER = { "allow_once", "allow_always", "reject_once", "reject_always" }

--- A one-line description of a tool call.
function M.describe(tool, arguments)
  arguments = type(arguments) == "table" and arguments or {}
  if arguments.command then
    return ("%s: %s"):format(tool, arguments.command)
  end
  if arguments.path then
    return ("%s %s"):format(tool, arguments.path)
  end
  local ok, json = pcall(vim.json.encode, arguments)
  json = ok and json or ""
  json = require("agent_host.compat").truncate(json, 80)
  return ("%s %s"):format(tool, json)
end

--- Show `text` in a floating window; returns a function that closes it.
local function show_float(text, filetype, title)
  local lines = vim.split(text, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = filetype
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  local width = math.max(20, vim.fn.strdisplaywidth(title or "") + 2)
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 4))
  local height = math.min(#lines, math.max(3, vim.o.lines - 8))
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = "editor",
    row = 1,
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    width = width,
    height = height,
    style = "minimal",
    border = "rounded",
    title = title,
    title_pos = "center",
    zindex = 60,
  })
  if not ok then
    return function() end, buf
  end
  vim.cmd("redraw")
  return function()
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end, buf
end

M.showing = nil -- the buffer of the diff float while a question is open (tests look at it)

--- Ask; `done(outcome)` gets one of the options, or nil when dismissed.
function M.ask(params, done)
  local options = {}
  local offered = {}
  for _, option in ipairs(params.options or ORDER) do
    offered[option] = true
  end
  for _, option in ipairs(ORDER) do
    if offered[option] then
      table.insert(options, option)
    end
  end
  local what = M.describe(params.tool or "?", params.arguments)
  local labels = M.labels
  local close = function() end
  if type(params.sandboxDenial) == "string" then
    -- The sandbox stopped this command: the question is whether to run it unconfined.
    what = "run WITHOUT the sandbox: " .. what
    labels = vim.tbl_extend("force", M.labels, {
      allow_always = "Allow always (this command, without the sandbox)",
      reject_always = "Reject always (this command)",
    })
    local command = type(params.arguments) == "table" and params.arguments.command or "?"
    local text = ("%s\n\nThe sandbox stopped it: %s"):format(tostring(command), params.sandboxDenial)
    close, M.showing = show_float(text, "sh", " agent-host wants to run without the sandbox ")
  elseif type(params.diff) == "string" and params.diff ~= "" then
    close, M.showing = show_float(params.diff, "diff", " agent-host wants to " .. what .. " ")
  elseif params.kind == "command" and type(params.arguments) == "table" and params.arguments.command then
    close, M.showing = show_float(tostring(params.arguments.command), "sh", " agent-host wants to run ")
  end
  local answered = false
  vim.ui.select(options, {
    prompt = ("agent-host: %s?"):format(what),
    kind = "agent_host.permission",
    format_item = function(option)
      return labels[option] or option
    end,
  }, function(choice)
    if answered then
      return
    end
    answered = true
    close()
    M.showing = nil
    done(choice)
  end)
end

--- The handler: returns {outcome} (after the user chose).
---@param on_answer fun(ctx, params, outcome)? told the outcome (chat, status)
function M.handler_with(on_ask, on_answer)
  return function(_, params, ctx)
    params = params or {}
    if on_ask then
      pcall(on_ask, ctx, params)
    end
    local co, is_main = coroutine.running()
    local outcome
    if co and not is_main then
      M.ask(params, function(choice)
        -- resume after the handler has yielded, even when vim.ui.select
        -- called back at once
        vim.schedule(function()
          coroutine.resume(co, choice)
        end)
      end)
      outcome = coroutine.yield()
    else
      -- Not in a coroutine (should not happen on 0.10+): ask synchronously.
      local choice = vim.fn.confirm(
        ("agent-host: %s?"):format(M.describe(params.tool or "?", params.arguments)),
        "&Allow once\nAllow &always\n&Reject\nR&eject always",
        3
      )
      outcome = ORDER[choice]
    end
    outcome = outcome or "reject_once"
    if on_answer then
      pcall(on_answer, ctx, params, outcome)
    end
    return { outcome = outcome }
  end
end

return M
