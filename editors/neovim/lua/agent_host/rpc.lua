-- Talking to an instance's server: its live LSP client, and requests and
-- notifications that wait for initialize to be answered. Used through
-- agent_host.client, which re-exports all of it.
local compat = require("agent_host.compat")

local M = {}

-- These call one another through agent_host.client (which requires this
-- module, hence not at the top), as they did when they lived there, so that
-- a wrapped client function is the one used.
local function client_module()
  return require("agent_host.client")
end

--- The instance's running LSP client, or nil (none, or stopped).
function M.client(inst)
  if not inst or not inst.client_id then
    return nil
  end
  local client = vim.lsp.get_client_by_id(inst.client_id)
  if not client or compat.is_stopped(client) then
    return nil
  end
  return client
end

--- Run fn(client) once the server is initialized; fn(nil, why) if it can't be.
function M.with_client(inst, fn)
  local client = client_module().client(inst)
  if not client then
    fn(nil, "the agent-host server is not running (it could not start or has stopped)")
    return
  end
  if inst.ready then
    fn(client)
  else
    table.insert(inst.pending, fn)
  end
end

--- Send a request once ready; handler(err, result) (err: {code, message}).
---@return table handle {request_id?}: filled once the request is sent
function M.request(inst, method, params, handler)
  local handle = {}
  client_module().with_client(inst, function(client, why)
    if not client then
      handler({ code = -32603, message = why }, nil)
      return
    end
    local ok, request_id = compat.request(client, method, params, function(err, result)
      handler(err, result)
    end)
    if not ok then
      handler({ code = -32603, message = "could not send " .. method .. " (the server is gone?)" }, nil)
      return
    end
    handle.request_id = request_id
    handle.client_id = client.id
  end)
  return handle
end

function M.notify(inst, method, params)
  local client = client_module().client(inst)
  if client and inst.ready then
    return compat.notify(client, method, params)
  end
  return false
end

return M
