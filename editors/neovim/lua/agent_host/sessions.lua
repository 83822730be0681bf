-- Session commands: :AgentNew, :AgentHistory, :AgentSessions[!] (pick and
-- resume: this root's sessions, or with ! every workspace's), :AgentFork
-- (from a checkpoint, or all of it), :AgentClose, :AgentCompact.
local chat = require("agent_host.chat")
local checkpoints = require("agent_host.checkpoints")
local client = require("agent_host.client")
local compat = require("agent_host.compat")
local util = require("agent_host.util")

local notify, fail = util.notify, util.fail

local M = {}

--- Start a new session (the next prompt goes there).
function M.new_session(title, on_done)
  local inst = util.current()
  if not util.require_idle(inst, "starting a session") then
    return
  end
  local params = vim.empty_dict()
  if title and title ~= "" then
    params = { title = title }
  end
  client.request(inst, "session/new", params, function(err, result)
    if err then
      return fail("session/new")(err)
    end
    inst.session_id = result.sessionId
    inst.total_cost = nil
    -- Stored (and listed) from its first prompt: until then :AgentSessions shows it
    -- from here (turn.lua lets go of this at the first :AgentSend).
    inst.unprompted = { sessionId = result.sessionId, title = params.title or "", pending = true }
    chat.clear(inst, "# Session " .. result.sessionId)
    client.changed()
    notify("new session " .. result.sessionId)
    if on_done then
      on_done(result)
    end
  end)
end

--- Show the current session's conversation in the chat buffer.
function M.history(on_done)
  local inst = util.current()
  if not util.require_session(inst) then
    return
  end
  local session_id = inst.session_id
  client.request(inst, "session/history", { sessionId = session_id }, function(err, result)
    if err then
      return fail("session/history")(err)
    end
    chat.history(inst, session_id, result.messages)
    chat.open(inst, false)
    if on_done then
      on_done(result)
    end
  end)
end

--- A session as :AgentSessions lists it; `current` is the current session's id.
local function session_label(s, current)
  local title = (s.title or ""):gsub("%s+", " ")
  title = compat.truncate(title, 60)
  if s.pending then
    return ("%s  (current, new: stored from its first prompt)  %s"):format(title ~= "" and title or "New session", s.sessionId)
  end
  return ("%s  (%d turn%s, %s%s)  %s"):format(
    title ~= "" and title or "(untitled)",
    s.turns or 0,
    s.turns == 1 and "" or "s",
    (s.updatedAt or ""):gsub("T", " "):sub(1, 16),
    s.sessionId == current and ", current" or "",
    s.sessionId
  )
end

--- The label with the folder the session was started in (when listing them all).
local function session_label_with_workspace(s, current)
  local folder = "folder unknown"
  if type(s.workspace) == "string" and s.workspace ~= "" then
    folder = vim.fn.fnamemodify(s.workspace, ":~")
  end
  return ("%s  [%s]"):format(session_label(s, current), folder)
end

--- Make `session_id` the current session (session/resume) and show its
--- conversation; `message(result)` is what to tell the user.
local function switch_to(inst, session_id, message, on_done)
  client.request(inst, "session/resume", { sessionId = session_id }, function(err, result)
    if err then
      return fail("session/resume")(err)
    end
    inst.session_id = result.sessionId
    -- the session's cost so far; a null one is unknown (nil: no turn yet)
    if type(result.totalCost) == "number" then
      inst.total_cost = result.totalCost
    else
      inst.total_cost = (result.turns or 0) > 0 and false or nil
    end
    client.changed()
    notify(message(result))
    util.api().history(function()
      if on_done then
        on_done(result)
      end
    end)
  end)
end

--- Resume a session by id: it becomes current and its history is shown.
function M.resume(session_id, on_done)
  local inst = util.current()
  if not util.require_idle(inst, "switching sessions") then
    return
  end
  switch_to(inst, session_id, function(result)
    return ("resumed %s (%d turn%s)"):format(result.sessionId, result.turns or 0, result.turns == 1 and "" or "s")
  end, on_done)
end

M.WHOLE = "whole conversation"

--- Fork the current session: a new session with its conversation up to just
--- before checkpoint `seq`, or all of it (seq "all"); nil: pick one of the
--- checkpoints or the whole conversation. The fork becomes the current
--- session and its conversation is shown; the source is left as it is.
--- on_done gets session/fork's result ({sessionId}); `number` is the
--- checkpoint's number as listed, for the message.
function M.fork(seq, on_done, number)
  local inst = util.current()
  if not util.require_session(inst) or not util.require_idle(inst, "forking") then
    return
  end
  local source = inst.session_id
  local function fork(at, n)
    local params = { sessionId = source }
    if at ~= "all" then
      params.seq = at
    end
    client.request(inst, "session/fork", params, function(err, result)
      if err then
        return fail("session/fork")(err)
      end
      local where = at == "all" and "the whole conversation"
        or (n and ("before checkpoint %d"):format(n) or ("before the checkpoint at seq %d"):format(at))
      switch_to(inst, result.sessionId, function()
        return ("forked %s (%s) into %s"):format(source, where, result.sessionId)
      end, function()
        if on_done then
          on_done(result)
        end
      end)
    end)
  end
  if seq ~= nil then
    return fork(seq, number)
  end
  checkpoints.pick(inst, { prompt = "agent-host: fork with the conversation before", extra = { M.WHOLE } }, function(choice)
    if choice == M.WHOLE then
      return fork("all")
    end
    fork(choice.seq, checkpoints.number(choice))
  end)
end

--- Close the current session: the server stops a turn running in it and lets
--- go of it. It stays stored (:AgentSessions resumes it); the chat is cleared
--- and the next prompt starts a new session.
function M.close(on_done)
  local inst = util.current()
  if not util.require_session(inst) then
    return
  end
  if inst.busy then
    notify(("%s is running; wait for it before closing the session"):format(inst.busy.what), vim.log.levels.WARN)
    return
  end
  local session_id = inst.session_id
  local turn = inst.turn
  if turn then
    inst.activity = "cancelling" -- the server cancels the turn before it answers
    client.changed()
  end
  client.request(inst, "session/close", { sessionId = session_id }, function(err)
    if err then
      return fail("session/close")(err)
    end
    if turn and inst.turn == turn then
      -- its answer (cancelled) is late: it belongs to the closed session
      client.finish_turn(inst, turn)
      pcall(turn.done, nil, nil)
    end
    -- a session is stored from its first prompt: one closed before it is gone
    local kept, told = "it stays stored: :AgentSessions resumes it", "it stays stored (:AgentSessions resumes it)"
    if inst.unprompted and inst.unprompted.sessionId == session_id then
      kept = "it had no prompt, so nothing of it was stored"
      told = kept
      inst.unprompted = nil
    end
    if inst.session_id == session_id then
      inst.session_id = nil
      inst.total_cost = nil
      inst.last_result = nil
      chat.clear(inst)
      chat.note(inst, ("Closed session %s (%s). The next :AgentSend starts a new session."):format(session_id, kept))
      client.changed()
    end
    notify(("closed %s; %s"):format(session_id, told))
    if on_done then
      on_done(session_id)
    end
  end)
end

--- Pick a stored session with vim.ui.select and resume it. The sessions
--- started in the current root; with opts.all, those of every workspace
--- (:AgentSessions!), each labelled with its folder. A session is listed from
--- its first prompt: the current one before it (:AgentNew) is the first item.
function M.sessions(on_done, opts)
  local all = opts ~= nil and opts.all == true
  local inst = util.current()
  local here = vim.fn.fnamemodify(inst.root, ":~")
  local params = all and vim.empty_dict() or { workspace = inst.root }
  client.request(inst, "session/list", params, function(err, result)
    if err then
      return fail("session/list")(err)
    end
    local sessions = result.sessions or {}
    -- The current session before its first prompt is stored nowhere yet: on top.
    local pending = inst.unprompted
    if pending and pending.sessionId == inst.session_id then
      for _, s in ipairs(sessions) do
        if s.sessionId == pending.sessionId then
          pending = nil
          break
        end
      end
      if pending then
        table.insert(sessions, 1, vim.tbl_extend("force", pending, { workspace = inst.root }))
      end
    end
    if #sessions == 0 then
      if all then
        notify("no stored sessions")
      else
        notify(("no stored sessions in %s (:AgentSessions! lists every workspace's)"):format(here))
      end
      return
    end
    vim.ui.select(sessions, {
      prompt = ("agent-host: resume session (%s)"):format(all and "every workspace" or here),
      kind = "agent_host.session",
      format_item = function(s)
        return (all and session_label_with_workspace or session_label)(s, inst.session_id)
      end,
    }, function(choice)
      if choice and choice.pending then
        chat.open(inst, false) -- already the current session
        if on_done then
          on_done({ sessionId = choice.sessionId, turns = 0 })
        end
      elseif choice then
        util.api().resume(choice.sessionId, on_done)
      end
    end)
  end)
end

--- Summarise the older part of the conversation.
function M.compact(instructions, on_done)
  local inst = util.current()
  if not util.require_session(inst) or not util.require_idle(inst, "compacting") then
    return
  end
  local params = { sessionId = inst.session_id }
  if instructions and instructions ~= "" then
    params.instructions = instructions
  end
  local busy = { what = "compaction" }
  inst.busy = busy
  inst.activity = "compacting"
  client.changed()
  busy.handle = client.request(inst, "session/compact", params, function(err, result)
    if inst.busy ~= busy then
      return
    end
    inst.busy = nil
    inst.activity = nil
    client.changed()
    if err then
      return fail("session/compact")(err)
    end
    local text = ("— compacted: ~%d → ~%d tokens"):format(result.before or 0, result.after or 0)
    if result.compacted == false then
      text = ("— left as it was: ~%d tokens, too little to summarise"):format(result.before or 0)
    end
    chat.note(inst, text, "AgentHostFooter")
    notify(text)
    if on_done then
      on_done(result)
    end
  end)
end

return M
