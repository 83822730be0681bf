-- The statusline text, require("agent_host").status(). Statuslines are told
-- to redraw by client.changed() (User AgentHostStatus).
local chat = require("agent_host.chat")
local client = require("agent_host.client")

local M = {}

--- A short text for the statusline: "" when no server runs.
---   agent-host: tool edit_file · $0.0123
function M.status()
  local inst = client.last_root and client.instances[client.last_root]
  if not inst or not inst.client_id then
    return ""
  end
  local state
  if not inst.ready then
    state = "starting"
  elseif inst.activity then
    state = inst.activity
  elseif inst.turn then
    state = "thinking"
  else
    state = "idle"
  end
  local cost = inst.total_cost == nil and "" or (" · " .. chat.money(inst.total_cost))
  return ("agent-host: %s%s"):format(state, cost)
end

return M
