-- :checkhealth agent_host
local M = {}

function M.check()
  local health = vim.health
  health.start("agent-host")
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.10 or later is needed")
  end
  local config = require("agent_host.config").options
  local cmd = config.cmd
  if type(cmd) == "table" and cmd[1] then
    if vim.fn.executable(cmd[1]) == 1 then
      health.ok(("server command: %s"):format(table.concat(cmd, " ")))
    else
      health.error(
        ("server command not found: %s"):format(cmd[1]),
        { "pip install . in a clone of agent-host, or set cmd = { '/path/to/python', '-m', 'agent_host', 'serve' }" }
      )
    end
  end
  health.info(("model: %s, approval: %s, sandbox: %s, store: %s"):format(
    config.model or "(server default)",
    config.approval or "(server default: ask)",
    config.sandbox or "(server default: workspace-write)",
    config.store or "(server default)"
  ))
  local client = require("agent_host.client")
  local any = false
  for root, inst in pairs(client.instances) do
    any = true
    local running = client.client(inst) ~= nil
    local line = ("%s: %s, session %s"):format(
      root,
      running and (inst.ready and "running" or "starting") or "stopped",
      inst.session_id or "(none)"
    )
    if running then
      health.ok(line)
    else
      health.info(line)
    end
  end
  if not any then
    health.info("no server started yet")
  end
  local ok_path, log_path = pcall(vim.lsp.get_log_path)
  if ok_path then
    health.info("the server's stderr goes to the LSP log: " .. log_path)
  end
  local log = require("agent_host.edits").log
  for i = math.max(1, #log - 4), #log do
    health.info(("edit %s: %s"):format(log[i].uri, log[i].how))
  end
end

return M
