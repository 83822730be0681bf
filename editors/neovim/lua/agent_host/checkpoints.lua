-- Checkpoints and restores: :AgentCheckpoints, :AgentRestore (checkpoint and
-- mode pickers), :AgentUndoRestore.
local chat = require("agent_host.chat")
local client = require("agent_host.client")
local compat = require("agent_host.compat")
local util = require("agent_host.util")

local notify, fail = util.notify, util.fail

local M = {}

local function checkpoint_label(c)
  local prompt = (c.prompt or ""):gsub("%s+", " ")
  prompt = compat.truncate(prompt, 60)
  local files = c.files and #c.files > 0 and (" [" .. table.concat(c.files, ", ") .. "]") or ""
  return ("#%d  %s  %s%s"):format(c.seq, (c.createdAt or ""):gsub("T", " "):sub(1, 16), prompt, files)
end

local function checkpoints(inst, fn)
  client.request(inst, "session/checkpoints", { sessionId = inst.session_id }, function(err, result)
    if err then
      return fail("session/checkpoints")(err)
    end
    fn(result.checkpoints or {})
  end)
end

--- List the current session's checkpoints in the chat buffer and the
--- quickfix list (one entry per changed file).
function M.checkpoints(on_done)
  local inst = util.current()
  if not util.require_session(inst) then
    return
  end
  checkpoints(inst, function(list)
    local lines = { ("Checkpoints of %s (:AgentRestore to go back to one):"):format(inst.session_id) }
    local qf = {}
    for _, c in ipairs(list) do
      table.insert(lines, "  " .. checkpoint_label(c))
      for _, file in ipairs(c.files or {}) do
        table.insert(qf, {
          filename = vim.fs.joinpath and vim.fs.joinpath(inst.root, file) or (inst.root .. "/" .. file),
          lnum = 1,
          text = ("checkpoint #%d: %s"):format(c.seq, (c.prompt or ""):gsub("%s+", " ")),
        })
      end
    end
    if #list == 0 then
      table.insert(lines, "  (none yet)")
    end
    chat.section(inst, lines, "AgentHostNote")
    chat.open(inst, false)
    vim.fn.setqflist({}, " ", { title = "agent-host checkpoints", items = qf })
    if on_done then
      on_done(list)
    end
  end)
end

--- Re-render the chat from session/history, then `then_` (also on failure).
local function refresh_history(inst, then_)
  local session_id = inst.session_id
  client.request(inst, "session/history", { sessionId = session_id }, function(err, result)
    if not err and inst.session_id == session_id then
      chat.history(inst, session_id, result.messages)
    end
    then_()
  end)
end

M.restore_modes = {
  both = { files = true, conversation = true, label = "files and conversation" },
  files = { files = true, conversation = false, label = "files only" },
  conversation = { files = false, conversation = true, label = "conversation only" },
}

local function report_restore(inst, verb, result, count_key)
  local files = result.restoredFiles or {}
  local text = ("⟲ %s: %d file%s%s, %d event%s"):format(
    verb,
    #files,
    #files == 1 and "" or "s",
    #files > 0 and (" (" .. table.concat(files, ", ") .. ")") or "",
    result[count_key] or 0,
    result[count_key] == 1 and "" or "s"
  )
  chat.note(inst, text, "AgentHostFooter")
  notify(text)
  local unreverted = result.unrevertedBuffers or {}
  if #unreverted > 0 then
    local msg = "these open buffers could not be brought back (their files were): " .. table.concat(unreverted, ", ")
    chat.note(inst, "  ! " .. msg, "AgentHostError")
    notify(msg, vim.log.levels.WARN)
  end
  local kept = result.keptFiles or {}
  if #kept > 0 then
    local msg = "left as they are (changed since the agent wrote them): " .. table.concat(kept, ", ")
    chat.note(inst, "  ! " .. msg, "AgentHostError")
    notify(msg, vim.log.levels.WARN)
  end
end

--- Restore to checkpoint `seq`; mode "both" | "files" | "conversation".
function M.restore(seq, mode, on_done)
  local inst = util.current()
  if not util.require_session(inst) or not util.require_idle(inst, "restoring") then
    return
  end
  local m = util.api().restore_modes[mode or "both"]
  if not m then
    notify("restore what? both, files or conversation", vim.log.levels.ERROR)
    return
  end
  inst.busy = { what = "restore" }
  inst.activity = "restoring"
  client.changed()
  client.request(inst, "session/restore", {
    sessionId = inst.session_id,
    seq = seq,
    files = m.files,
    conversation = m.conversation,
  }, function(err, result)
    inst.busy = nil
    inst.activity = nil
    client.changed()
    if err then
      return fail("session/restore")(err)
    end
    local function report()
      report_restore(inst, ("restored to #%d (%s)"):format(seq, m.label), result, "removedEvents")
      if on_done then
        on_done(result)
      end
    end
    if m.conversation then
      refresh_history(inst, report) -- the chat shows the conversation as it now is
    else
      report()
    end
  end)
end

--- Pick a checkpoint, then what to restore, then restore.
function M.restore_pick(seq, mode, on_done)
  local inst = util.current()
  if not util.require_session(inst) then
    return
  end
  local function pick_mode(chosen)
    if mode then
      return util.api().restore(chosen, mode, on_done)
    end
    local modes = { "both", "files", "conversation" }
    vim.ui.select(modes, {
      prompt = ("agent-host: restore #%d"):format(chosen),
      kind = "agent_host.restore_mode",
      format_item = function(k)
        return util.api().restore_modes[k].label
      end,
    }, function(choice)
      if choice then
        util.api().restore(chosen, choice, on_done)
      end
    end)
  end
  if seq then
    return pick_mode(seq)
  end
  checkpoints(inst, function(list)
    if #list == 0 then
      notify("the session has no checkpoints")
      return
    end
    vim.ui.select(list, {
      prompt = "agent-host: restore to just before",
      kind = "agent_host.checkpoint",
      format_item = checkpoint_label,
    }, function(choice)
      if choice then
        pick_mode(choice.seq)
      end
    end)
  end)
end

--- Undo the last restore.
function M.undo_restore(on_done)
  local inst = util.current()
  if not util.require_session(inst) or not util.require_idle(inst, "undoing a restore") then
    return
  end
  client.request(inst, "session/undoRestore", { sessionId = inst.session_id }, function(err, result)
    if err then
      return fail("session/undoRestore")(err)
    end
    refresh_history(inst, function()
      report_restore(inst, "restore undone", result, "restoredEvents")
      if on_done then
        on_done(result)
      end
    end)
  end)
end

return M
