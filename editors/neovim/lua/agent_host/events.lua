-- What a server sends its instance: session/event notifications (streamed
-- into the chat), permission questions, the initialize answer, and its exit.
--
-- agent_host.client builds each client's config from these; it requires this
-- module when it starts a server (this one requires it back at load time).
local chat = require("agent_host.chat")
local client = require("agent_host.client")
local edits = require("agent_host.edits")
local permission = require("agent_host.permission")

local M = {}

-- session/event ---------------------------------------------------------

function M.on_event(inst, params)
  local session = params.sessionId
  local turn = inst.turn
  local mine = session ~= nil and (session == inst.session_id or (turn and session == turn.session_id))
  if not mine then
    return
  end
  local kind, data = params.kind, params.data or {}
  if kind == "text_delta" then
    if turn then
      turn.streamed = true
      turn.got_output = true
    end
    chat.append_text(inst, data.text)
    if inst.activity ~= "writing" then
      inst.activity = "writing"
      client.changed()
    end
  elseif kind == "assistant_message" then
    -- the text was streamed already, unless the provider does not stream
    if turn and not turn.streamed and type(data.text) == "string" and data.text ~= "" then
      chat.append_text(inst, data.text)
    end
    if turn then
      turn.streamed = false
    end
  elseif kind == "user_prompt" then
    if turn then
      turn.checkpoint = data.seq
    end
  elseif kind == "tool_call" then
    chat.tool_call(inst, data)
    inst.activity = "tool " .. tostring(data.name)
    client.changed()
  elseif kind == "tool_result" then
    chat.tool_result(inst, data)
    inst.activity = "thinking"
    client.changed()
  elseif kind == "usage" then
    if turn then
      turn.cost = (turn.cost or 0) + (tonumber(data.cost) or 0)
    end
  elseif kind == "turn_end" then
    if turn then
      turn.ended = data.stopReason
    end
  elseif kind == "compaction_progress" then
    -- its stages go to the statusline; the chat gets one line when it ends
    if inst.busy and inst.busy.what == "compaction" and data.stage and data.stage ~= "done" then
      inst.activity = "compacting: " .. tostring(data.stage)
      client.changed()
    end
  elseif kind == "mcp_server" and (data.state == "failed" or data.state == "restarted") then
    chat.note(inst, "! " .. tostring(data.message or data.server))
    vim.notify("agent-host: " .. tostring(data.message or data.server), vim.log.levels.WARN)
  end
end

-- server -> client requests and notifications ---------------------------------

--- The `handlers` of a client config.
function M.handlers()
  return {
    ["session/event"] = function(_, params, ctx)
      local target = client.by_client(ctx.client_id)
      if target and params then
        client.on_event(target, params) -- M.on_event, through client as before
      end
    end,
    ["session/requestPermission"] = permission.handler_with(function(ctx, params)
      local target = client.by_client(ctx.client_id)
      if target then
        target.activity = "permission?"
        chat.append_lines(target, { "? " .. permission.describe(params.tool or "?", params.arguments) }, "AgentHostAsk")
        client.changed()
      end
    end, function(ctx, params, outcome)
      local target = client.by_client(ctx.client_id)
      if target then
        target.activity = outcome:match("^allow") and ("tool " .. tostring(params.tool or "?")) or "thinking"
        chat.append_lines(target, { "  → " .. (permission.labels[outcome] or outcome) }, "AgentHostAsk")
        client.changed()
      end
    end),
    ["workspace/applyEdit"] = edits.handler,
  }
end

-- initialize and exit ---------------------------------------------------------

--- The `on_init` of a client config: the instance is ready; run what waited.
function M.on_init(lsp_client, result)
  local target = client.by_client(lsp_client.id)
  if not target then
    return
  end
  target.ready = true
  local info = vim.tbl_get(result or {}, "capabilities", "experimental", "agentHost")
  target.server_info = info
  if info and info.protocolVersion ~= 1 then
    vim.notify(
      ("agent-host: the server speaks protocol %s; this plugin knows 1"):format(tostring(info.protocolVersion)),
      vim.log.levels.WARN
    )
  end
  local pending = target.pending
  target.pending = {}
  for _, fn in ipairs(pending) do
    local ok, err = pcall(fn, lsp_client)
    if not ok then
      vim.notify("agent-host: " .. tostring(err), vim.log.levels.ERROR)
    end
  end
  client.changed()
end

local function drop_pending(inst, why)
  local pending = inst.pending
  inst.pending = {}
  for _, fn in ipairs(pending) do
    pcall(fn, nil, why)
  end
end

local function exited(inst, client_id, code, signal)
  if inst.client_id ~= client_id then
    return
  end
  inst.client_id = nil
  inst.ready = false
  drop_pending(inst, "the agent-host server exited")
  local turn = inst.turn
  if turn then
    chat.note(inst, ("— the server exited (code %s) during the turn"):format(tostring(code)), "AgentHostError")
    client.finish_turn(inst, turn)
    if turn.done then
      turn.done({ code = -32603, message = "the agent-host server exited during the turn" }, nil)
    end
  end
  inst.busy = nil
  inst.activity = nil
  if code ~= 0 and not inst.stopping then
    vim.notify(
      ("agent-host: the server exited with code %s%s; see the LSP log (:checkhealth agent_host names it)"):format(
        tostring(code),
        signal and signal ~= 0 and (" (signal " .. signal .. ")") or ""
      ),
      vim.log.levels.ERROR
    )
  end
  inst.stopping = false
  client.changed()
end

--- The `on_exit` of a client config: the turn, pending requests and busy
--- work of the instance end with its server.
function M.on_exit(code, signal, client_id)
  vim.schedule(function()
    local target = client.by_client(client_id)
    if target then
      exited(target, client_id, code, signal)
    end
  end)
end

return M
