-- What the command modules (turn, sessions, checkpoints) share: messages,
-- error reporting, the current instance, and the checks run before a command.
local M = {}

function M.notify(msg, level)
  vim.notify("agent-host: " .. msg, level or vim.log.levels.INFO)
end

function M.error_message(err)
  if type(err) == "table" then
    return err.message or vim.inspect(err)
  end
  return tostring(err)
end

--- A request handler's error report: "<what> failed: <message>".
function M.fail(what)
  return function(err)
    M.notify(("%s failed: %s"):format(what, M.error_message(err)), vim.log.levels.ERROR)
  end
end

--- require("agent_host"): the command modules call one another through it,
--- as they did when they were one module, so that a wrapped or replaced API
--- function (say restore, around :AgentRestore's pickers) is the one used.
function M.api()
  return require("agent_host")
end

--- The instance for the current buffer's root (server started if needed);
--- runs setup() with the defaults if it was not called. See agent_host.current.
function M.current()
  return M.api().current()
end

function M.require_session(inst)
  if not inst.session_id then
    M.notify("no session yet: :AgentSend a prompt or :AgentSessions to resume one", vim.log.levels.WARN)
    return false
  end
  return true
end

function M.require_idle(inst, what)
  if inst.turn then
    M.notify(("a turn is running; wait for it or :AgentCancel before %s"):format(what), vim.log.levels.WARN)
    return false
  end
  if inst.busy then
    M.notify(("%s is running; wait for it before %s"):format(inst.busy.what, what), vim.log.levels.WARN)
    return false
  end
  return true
end

return M
