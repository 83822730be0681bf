-- :AgentFork (the checkpoint picker with "whole conversation", and with a seq
-- that is no checkpoint), :AgentClose (idle, with no session, and during a
-- running turn), and prompts to a new session and to a closed one after.
--
-- The scripted model plays the step numbered by the assistant messages already
-- in the session: a fork with one of them goes on with step 1.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

vim.fn.chdir(cfg.root)
vim.cmd.edit("a.py")
local agent = H.setup()
H.wait_ready()
local inst = H.instance()

local messages = {}
local real_notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(messages, { msg = msg, level = level or vim.log.levels.INFO })
  return real_notify(msg, level, opts)
end
local function last_message()
  return messages[#messages] and messages[#messages].msg or vim.NIL
end

--- A request to the server, waited for: err, result.
local function request(method, params)
  local done, e, r = false, nil, nil
  require("agent_host.client").request(inst, method, params, function(err, result)
    done, e, r = true, err, result
  end)
  H.wait(method, 10000, function()
    return done
  end)
  return e, r
end

local function said(session_id)
  local err, result = request("session/history", { sessionId = session_id })
  if err then
    H.fail("session/history: " .. vim.inspect(err))
  end
  local out = {}
  for _, m in ipairs(result.messages) do
    table.insert(out, { m.role, m.content })
  end
  return out
end

local function switched(what, from)
  H.wait(what, 10000, function()
    return inst.session_id and inst.session_id ~= from and H.chat_text():find("# Session " .. inst.session_id, 1, true)
  end)
  H.wait_idle(what)
  return inst.session_id
end

-- a session with two turns
vim.cmd("AgentSend first question")
H.wait_idle("the first turn")
vim.cmd("AgentSend second question")
H.wait_idle("the second turn")
local source = inst.session_id
local second = inst.last_result.checkpoint
H.record("source", source)
H.record("second_checkpoint", second)

-- 1. :AgentFork, picking the second prompt: the fork has the first turn
H.answer(function(item)
  return type(item) == "table" and item.seq == second
end)
vim.cmd("AgentFork")
local fork1 = switched("the fork to be current", source)
H.record("fork1", fork1)
H.record("fork1_chat", H.chat_text())
H.record("fork1_said", said(fork1))
H.record("fork1_message", last_message())
H.record("source_said", said(source))
H.step("forked")

-- the next prompt goes to the fork
vim.cmd("AgentSend a question in the fork")
H.wait_idle("the turn in the fork")
H.record("fork1_turn_session", inst.last_result.sessionId)
H.record("fork1_said_after", said(fork1))

-- 2. :AgentFork, picking "whole conversation"
H.answer(function(item)
  return item == "whole conversation"
end)
vim.cmd("AgentFork")
local fork2 = switched("the whole fork to be current", fork1)
H.record("fork2", fork2)
H.record("fork2_said", said(fork2))
H.record("fork2_message", last_message())
H.step("forked whole")

-- 3. a seq that is no checkpoint: an error, the session stays
vim.cmd("AgentFork 999")
H.wait("the fork error", 10000, function()
  return messages[#messages].level == vim.log.levels.ERROR
end)
H.record("bad_fork_message", last_message())
H.record("bad_fork_session", inst.session_id)
pcall(vim.cmd, "AgentFork x") -- an error message, raised in a script
H.record("usage_message", last_message())

-- 4. :AgentClose: the chat starts afresh, the next prompt starts a new session
vim.cmd("AgentClose")
H.wait("the session to be closed", 10000, function()
  return inst.session_id == nil
end)
H.record("closed_chat", H.chat_text())
H.record("closed_message", last_message())
H.record("closed_status", agent.status())
vim.cmd("AgentClose")
H.record("close_nothing_message", last_message())
vim.cmd("AgentSend after the close")
H.wait_idle("the turn after the close")
H.record("after_close", { session = inst.session_id, result = inst.last_result, chat = H.chat_text() })
H.step("closed")

-- 5. the closed session stays stored: resumed, it takes the next prompt
local resumed
agent.resume(fork2, function(result)
  resumed = result
end)
H.wait("the closed session resumed", 10000, function()
  return resumed ~= nil
end)
vim.cmd("AgentSend a third question")
H.wait_idle("the turn in the resumed session")
H.record("resumed_result", inst.last_result)

-- 6. :AgentClose during a running turn: the server cancels it
local slow
agent.send("count slowly", {
  on_done = function(err, result)
    slow = { err = err or vim.NIL, result = result or vim.NIL }
  end,
})
H.wait("the slow turn to stream", 15000, function()
  return inst.turn and inst.turn.got_output
end)
H.record("closing_session", inst.session_id)
vim.cmd("AgentClose")
H.record("closing_status", agent.status())
H.wait("the running session to be closed", 10000, function()
  return inst.session_id == nil and inst.turn == nil
end)
H.wait("the slow turn's end", 10000, function()
  return slow ~= nil
end)
H.record("slow", slow)
H.record("closed_running_chat", H.chat_text())
H.record("closed_running_status", agent.status())
H.record("closed_running_said", said(fork2))
H.step("closed running")

H.record("messages", messages)
H.done()
