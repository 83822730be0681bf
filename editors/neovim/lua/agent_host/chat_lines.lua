-- What the chat's lines do beyond being read: tool outputs folded under
-- their summary line (closed until opened), and <CR> running a line's action
-- (the changed-file lines open a diff) or opening a fold.
local M = {}

--- A tool output's lines in the chat under its summary: folded (closed)
--- until opened (za, or <CR> on the summary line); see M.foldexpr.
M.OUTPUT_PREFIX = "    │ "

--- 'foldexpr' of chat windows: a tool output's summary line starts a fold
--- that holds its full output (the lines with OUTPUT_PREFIX).
function M.foldexpr(lnum)
  local function is_output(n)
    return vim.startswith(vim.fn.getline(n), M.OUTPUT_PREFIX)
  end
  if is_output(lnum) then
    return "1"
  end
  return is_output(lnum + 1) and ">1" or "0"
end

--- 'foldtext' of chat windows: the summary line as it is.
function M.foldtext()
  return vim.fn.getline(vim.v.foldstart)
end

--- The options of a window showing the chat: tool outputs folded.
function M.window_options(win)
  local wo = vim.wo[win]
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'agent_host.chat_lines'.foldexpr(v:lnum)"
  wo.foldtext = "v:lua.require'agent_host.chat_lines'.foldtext()"
  wo.foldlevel = 0
  wo.foldenable = true
  wo.fillchars = "fold: "
end

-- line actions ---------------------------------------------------------------

local actions_ns = vim.api.nvim_create_namespace("agent_host_chat_actions")

--- The keys a chat line can have an action for.
M.KEYS = { "<CR>", "U" }

--- Give chat line `row` (0-based) actions: {[key] = fn} for keys of M.KEYS
--- (the line keeps them as text is added around it).
function M.set_action(inst, row, actions)
  local id = vim.api.nvim_buf_set_extmark(inst.chat_buf, actions_ns, row, 0, {})
  inst.actions = inst.actions or {}
  inst.actions[id] = actions
end

--- `key` in the chat: the line's action for it (<CR>: open a diff, U: undo
--- a file); else <CR> opens or closes the fold of a tool's output.
function M.activate(inst, key)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local marks = vim.api.nvim_buf_get_extmarks(inst.chat_buf, actions_ns, { row, 0 }, { row, -1 }, {})
  for _, mark in ipairs(marks) do
    local fn = ((inst.actions or {})[mark[1]] or {})[key]
    if fn then
      return fn()
    end
  end
  if key == "<CR>" and vim.fn.foldlevel(row + 1) > 0 then
    vim.cmd("normal! za")
  end
end

--- Forget the actions (the chat is cleared).
function M.clear_actions(inst)
  if inst.chat_buf and vim.api.nvim_buf_is_valid(inst.chat_buf) then
    vim.api.nvim_buf_clear_namespace(inst.chat_buf, actions_ns, 0, -1)
  end
  inst.actions = {}
end

return M
