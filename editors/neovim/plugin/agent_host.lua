-- agent-host: the user commands, available before setup() (which they run
-- with the defaults if it was not called). See :help agent-host.
if vim.g.loaded_agent_host then
  return
end
vim.g.loaded_agent_host = 1

if vim.fn.has("nvim-0.10") == 0 then
  vim.api.nvim_echo({ { "agent-host needs Neovim 0.10 or later", "WarningMsg" } }, true, {})
  return
end

require("agent_host.commands").create()
