-- The sandbox's way out in Neovim: a command the sandbox stopped is asked about
-- again (vim.ui.select), its reason shown in the float; allowing runs it unconfined.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

vim.fn.chdir(cfg.root)
local agent = H.setup({ approval = "auto" })
H.wait_ready()
local permission = require("agent_host.permission")

local asked = {}
table.insert(H.answers, function(items, opts)
  local float_lines = vim.NIL
  if permission.showing and vim.api.nvim_buf_is_valid(permission.showing) then
    float_lines = H.lines(permission.showing)
  end
  local labels = {}
  for _, item in ipairs(items) do
    table.insert(labels, opts.format_item(item))
  end
  table.insert(asked, { prompt = opts.prompt, labels = labels, float_lines = float_lines })
  return "allow_once"
end)

vim.cmd("AgentSend write outside the project")
H.wait_idle("the turn with the sandbox's question", 30000)
H.record("asked", asked)
H.record("status", agent.status())
H.record("chat", H.chat_text())
H.done()
