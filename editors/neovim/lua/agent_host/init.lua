-- agent-host for Neovim: the editor client of `agent-host serve`.
--
--   require("agent_host").setup({ model = "openai/gpt-4.1-mini", approval = "auto-edit" })
--
-- See :help agent-host. This module is setup() and the Lua API behind the
-- commands; the API is implemented in
--   agent_host.turn         :AgentSend, :AgentCancel, closing turns on exit
--   agent_host.sessions     :AgentNew, :AgentHistory, :AgentSessions, :AgentFork,
--                           :AgentClose, :AgentCompact
--   agent_host.checkpoints  :AgentCheckpoints, :AgentRestore[!], :AgentUndoRestore
--   agent_host.preview      the restore preview (:AgentRestore)
--   agent_host.diffs        :AgentDiff[!], the changed files listed after a turn
--   agent_host.revert       :AgentUndoFile[!]
--   agent_host.status       the statusline text
local checkpoints = require("agent_host.checkpoints")
local client = require("agent_host.client")
local config = require("agent_host.config")
local diffs = require("agent_host.diffs")
local preview = require("agent_host.preview")
local revert = require("agent_host.revert")
local sessions = require("agent_host.sessions")
local status = require("agent_host.status")
local turn = require("agent_host.turn")

local M = {}

M.did_setup = false

--- The instance for the current buffer's root (server started if needed).
function M.current()
  if not M.did_setup then
    M.setup({ autostart = false })
  end
  return client.ensure(client.root_for(0))
end

-- the API ------------------------------------------------------------------

-- :AgentSend, :AgentCancel
M.selection_context = turn.selection_context
M.send = turn.send
M.cancel = turn.cancel

-- sessions
M.new_session = sessions.new_session
M.history = sessions.history
M.resume = sessions.resume
M.sessions = sessions.sessions
M.fork = sessions.fork
M.close = sessions.close
M.compact = sessions.compact

-- checkpoints
M.restore_modes = checkpoints.restore_modes
M.checkpoints = checkpoints.checkpoints
M.restore = checkpoints.restore
M.restore_pick = checkpoints.restore_pick
M.undo_restore = checkpoints.undo_restore
M.preview = preview.preview
M.undo_file = revert.undo_file

-- diffs
M.diff = diffs.diff

-- status
M.status = status.status

M.close_turns_on_exit = turn.close_turns_on_exit

--- Stop the server(s) (all roots, or the given one).
function M.stop(root)
  client.stop(root)
end

-- setup ----------------------------------------------------------------------

function M.create_commands()
  require("agent_host.commands").create()
end

local function set_highlights()
  local links = {
    AgentHostTitle = "Title",
    AgentHostHeader = "Title",
    AgentHostTool = "Function",
    AgentHostOk = "DiagnosticOk",
    AgentHostError = "DiagnosticError",
    AgentHostAsk = "DiagnosticWarn",
    AgentHostWarn = "DiagnosticWarn",
    AgentHostNote = "Comment",
    AgentHostFooter = "Comment",
    AgentHostContext = "Comment",
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

function M.setup(opts)
  opts = opts or {}
  local autostart = opts.autostart
  config.set(opts)
  M.did_setup = true
  M.create_commands()
  set_highlights()
  local group = vim.api.nvim_create_augroup("agent_host", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufFilePost", "BufWritePost" }, {
    group = group,
    desc = "agent-host: let the server see the buffers of its workspace",
    callback = function(ev)
      client.attach(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = set_highlights })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    desc = "agent-host: let running turns close in their logs before Neovim exits",
    callback = M.close_turns_on_exit,
  })
  if autostart ~= false and config.options.autostart ~= false then
    client.ensure(client.root_for(0))
  end
  return M
end

return M
