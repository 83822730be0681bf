-- :AgentCancel mid-turn: during a running tool, during streamed text, and
-- when the server never answers the cancel (the request is abandoned with
-- $/cancelRequest and cleaned up at cancel time). The session stays whole
-- and goes on.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

vim.fn.chdir(cfg.root)
vim.cmd.edit("a.py")
local agent = H.setup({ cancel_retry_ms = 200 })
H.wait_ready()
local inst = H.instance()

local function send_and_cancel(name, prompt, ready_to_cancel)
  local t0 = vim.uv.now()
  vim.cmd("AgentSend " .. prompt)
  H.wait(name .. ": the moment to cancel", 15000, function()
    return inst.turn and ready_to_cancel(inst.turn)
  end)
  H.record(name .. "_status_running", agent.status())
  local t1 = vim.uv.now()
  vim.cmd("AgentCancel")
  H.record(name .. "_status_cancelling", agent.status())
  H.wait_idle(name .. ": the turn to end after the cancel", 15000)
  H.record(name .. "_result", inst.last_result)
  H.record(name .. "_ms", { until_cancel = t1 - t0, cancel_to_idle = vim.uv.now() - t1 })
  H.record(name .. "_status_after", agent.status())
  inst.last_result = nil
end

-- 1. while run_command "sleep 5" runs
send_and_cancel("tool", "run the slow check", function()
  return H.chat_text():find("▸ run_command", 1, true) ~= nil
end)

-- 2. while text streams
send_and_cancel("text", "tell me a long story", function(turn)
  return turn.got_output
end)

-- 3. the server never gets a session/cancel: the plugin gives up waiting,
-- abandons the request ($/cancelRequest) and cleans up at once
local client = require("agent_host.client")
local real_notify = client.notify
client.notify = function(i, method, params)
  if method == "session/cancel" then
    return true -- lost
  end
  return real_notify(i, method, params)
end
require("agent_host.config").options.cancel_timeout_ms = 600
send_and_cancel("abandon", "and another long one", function(turn)
  return turn.got_output
end)
client.notify = real_notify
H.record("abandon_chat_note", H.chat_text():match("[^\n]*request abandoned[^\n]*"))

-- the server closes that turn on $/cancelRequest; wait until its log has it
local history
H.wait("the abandoned turn to be closed in the log", 10000, function()
  history = nil
  agent.history(function(result)
    history = result
  end)
  vim.wait(2000, function()
    return history ~= nil
  end, 20)
  if not history then
    return false
  end
  local assistants = 0
  for _, m in ipairs(history.messages) do
    if m.role == "assistant" then
      assistants = assistants + 1
    end
  end
  return assistants >= 3
end)

-- 4. the session goes on
local final
agent.send("are you still there?", {
  on_done = function(err, result)
    final = { err = err or vim.NIL, result = result or vim.NIL }
  end,
})
H.wait("the last turn", 15000, function()
  return final ~= nil
end)
H.record("final", final)

agent.history(function(result)
  history = result
end)
H.wait("the history", 10000, function()
  return history and #history.messages > 0 and history.messages[#history.messages].role == "assistant"
    and history.messages[#history.messages].content == "Recovered."
end)
H.record("history", history.messages)
H.record("chat", H.chat_text())
H.done()
