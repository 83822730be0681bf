-- The user commands. Kept apart from the rest so that plugin/agent_host.lua
-- defines them without loading the plugin: each loads it when first used.
local M = {}

local function agent()
  return require("agent_host")
end

local function complete_restore(arglead, cmdline)
  local words = vim.split(cmdline, "%s+", { trimempty = true })
  if #words >= 2 and (#words > 2 or arglead == "") then
    return vim.tbl_filter(function(k)
      return vim.startswith(k, arglead)
    end, { "both", "files", "conversation" })
  end
  return {}
end

function M.create()
  local cmd = vim.api.nvim_create_user_command
  cmd("AgentSend", function(args)
    local context
    if args.range > 0 then
      context = { agent().selection_context(0, args.line1, args.line2) }
    end
    if args.args ~= "" then
      return agent().send(args.args, { context = context })
    end
    vim.ui.input({ prompt = "agent-host> " }, function(input)
      if input and vim.trim(input) ~= "" then
        agent().send(input, { context = context })
      end
    end)
  end, { nargs = "*", range = true, desc = "agent-host: send a prompt (a range/selection goes as context)" })
  cmd("AgentNew", function(args)
    agent().new_session(args.args)
  end, { nargs = "*", desc = "agent-host: start a new session" })
  cmd("AgentSessions", function(args)
    agent().sessions(nil, { all = args.bang })
  end, { nargs = 0, bang = true, desc = "agent-host: resume a session of this workspace (! of every workspace)" })
  cmd("AgentFork", function(args)
    local n = args.fargs[1]
    if n and n ~= "all" and not tonumber(n) then
      return vim.notify("agent-host: usage: :AgentFork [N|all]", vim.log.levels.ERROR)
    end
    if n == nil or n == "all" then
      return agent().fork(n)
    end
    local inst = agent().current()
    if not require("agent_host.util").require_session(inst) then
      return
    end
    require("agent_host.checkpoints").find(inst, tonumber(n), function(c)
      agent().fork(c.seq, nil, tonumber(n))
    end)
  end, {
    nargs = "?",
    complete = function(arglead)
      return vim.startswith("all", arglead) and { "all" } or {}
    end,
    desc = "agent-host: fork the session before a checkpoint (all: the whole conversation)",
  })
  cmd("AgentClose", function()
    agent().close()
  end, { nargs = 0, desc = "agent-host: close the session (it stays stored); the next prompt starts a new one" })
  cmd("AgentCheckpoints", function()
    agent().checkpoints()
  end, { nargs = 0, desc = "agent-host: list the session's checkpoints" })
  cmd("AgentRestore", function(args)
    local n, mode = args.fargs[1], args.fargs[2]
    if n and not tonumber(n) then
      return vim.notify("agent-host: usage: :AgentRestore[!] [N] [both|files|conversation]", vim.log.levels.ERROR)
    end
    agent().restore_pick(n and tonumber(n), mode, nil, { force = args.bang })
  end, {
    nargs = "*",
    bang = true,
    complete = complete_restore,
    desc = "agent-host: restore files and/or conversation to a checkpoint (! overwrites files changed since)",
  })
  cmd("AgentDiff", function(args)
    local scope, n = args.fargs[1], args.fargs[2]
    if (scope and scope ~= "turn" and scope ~= "checkpoint") or (n and not tonumber(n)) then
      return vim.notify("agent-host: usage: :AgentDiff[!] [turn [N] | checkpoint N]", vim.log.levels.ERROR)
    end
    agent().diff(scope, n and tonumber(n), { quickfix = args.bang })
  end, {
    nargs = "*",
    bang = true,
    complete = function(arglead, cmdline)
      if #vim.split(cmdline, "%s+", { trimempty = true }) > (arglead == "" and 1 or 2) then
        return {}
      end
      return vim.tbl_filter(function(k)
        return vim.startswith(k, arglead)
      end, { "turn", "checkpoint" })
    end,
    desc = "agent-host: what the last turn (turn N, or everything since checkpoint N) changed: a diff tab per file (! hunks in quickfix)",
  })
  cmd("AgentUndoFile", function(args)
    agent().undo_file(args.args, { force = args.bang })
  end, {
    nargs = "?",
    bang = true,
    complete = "file",
    desc = "agent-host: undo the last turn's changes to a file (default: this buffer's); ! even if you changed it since",
  })
  cmd("AgentUndoRestore", function()
    agent().undo_restore()
  end, { nargs = 0, desc = "agent-host: undo the last restore" })
  cmd("AgentCompact", function(args)
    agent().compact(args.args)
  end, { nargs = "*", desc = "agent-host: summarise the older conversation" })
  cmd("AgentCancel", function()
    agent().cancel()
  end, { nargs = 0, desc = "agent-host: cancel the running turn" })
  cmd("AgentHistory", function()
    agent().history()
  end, { nargs = 0, desc = "agent-host: show the session's conversation" })
  cmd("AgentChat", function()
    require("agent_host.chat").open(agent().current(), true)
  end, { nargs = 0, desc = "agent-host: open the chat window" })
  cmd("AgentStop", function()
    agent().stop()
  end, { nargs = 0, desc = "agent-host: stop the server(s)" })
end

return M
