-- The plugin as installed: commands from plugin/ before setup(), the help
-- file, :checkhealth, and errors reported rather than thrown.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

local commands = {
  "AgentSend", "AgentNew", "AgentSessions", "AgentCheckpoints", "AgentRestore",
  "AgentUndoRestore", "AgentCompact", "AgentCancel", "AgentHistory", "AgentChat", "AgentStop",
  "AgentDiff", "AgentUndoFile",
}
local before = {}
for _, name in ipairs(commands) do
  before[name] = vim.fn.exists(":" .. name) == 2
end
H.record("commands_before_setup", before)
H.record("loaded_before_setup", package.loaded["agent_host"] ~= nil or package.loaded["agent_host.client"] ~= nil)

-- :help agent-host from the plugin's doc/ (helptags as a plugin manager runs them)
vim.cmd("helptags " .. vim.fn.fnameescape(cfg.plugin .. "/doc"))
local ok, err = pcall(vim.cmd, "help agent-host")
H.record("help_opened", ok and vim.bo.filetype == "help" or tostring(err))
local tags = {}
for _, name in ipairs(vim.list_extend(vim.deepcopy(commands), { "agent-host-setup", "agent-host-status()" })) do
  local tag = name:match("^Agent") and (":" .. name) or name
  tags[tag] = #vim.fn.taglist("^" .. vim.fn.escape(tag, "^$.*[]~\\") .. "$") > 0
end
H.record("help_tags", tags)
vim.cmd("helpclose")

-- a session command with nothing to act on says so instead of failing
vim.fn.chdir(cfg.root)
local messages = {}
local real_notify = vim.notify
vim.notify = function(msg, level)
  table.insert(messages, { msg = msg, level = level or vim.NIL })
end
local agent = H.setup({ autostart = false })
H.record("status_before_start", agent.status())
vim.cmd("AgentCheckpoints")
vim.cmd("AgentCancel")
H.wait_ready()
H.record("status_started", agent.status())
vim.notify = real_notify
H.record("messages", messages)

-- a server command that does not exist: an error message, no exception
messages = {}
vim.notify = function(msg, level)
  table.insert(messages, { msg = msg, level = level or vim.NIL })
end
local bad_ok, bad_err = pcall(function()
  require("agent_host.config").options.cmd = { cfg.root .. "/no-such-agent-host" }
  vim.fn.mkdir(cfg.root .. "/elsewhere", "p")
  require("agent_host.client").ensure(cfg.root .. "/elsewhere")
end)
vim.notify = real_notify
H.record("bad_cmd", { ok = bad_ok, err = bad_err or vim.NIL, messages = messages })

-- :checkhealth agent_host
local health_ok, health_err = pcall(vim.cmd, "checkhealth agent_host")
local health_text = health_ok and table.concat(H.lines(0), "\n") or tostring(health_err)
H.record("health", health_text)
H.done()
