-- Checkpoints and restores: :AgentCheckpoints, :AgentRestore[!] (checkpoint and
-- mode pickers; ! overwrites files changed since the agent wrote them),
-- :AgentUndoRestore; the checkpoint picker :AgentFork uses too.
local chat = require("agent_host.chat")
local client = require("agent_host.client")
local compat = require("agent_host.compat")
local util = require("agent_host.util")

local notify, fail = util.notify, util.fail

local M = {}

--- At most this many paths are named in a note; the rest are counted.
local MAX_NAMED = 10

local function list_paths(paths)
  if #paths <= MAX_NAMED then
    return table.concat(paths, ", ")
  end
  return ("%s, … and %d more"):format(table.concat(vim.list_slice(paths, 1, MAX_NAMED), ", "), #paths - MAX_NAMED)
end

--- "[a.py; by commands: gen.txt; not captured: node_modules/x.js]": the files the
--- turn changed, those a shell command changed apart, and what a command changed
--- that was not captured (a restore cannot put it back).
local function checkpoint_files(c)
  local by_command = {}
  for _, path in ipairs(c.fromCommands or {}) do
    by_command[path] = true
  end
  local tools, commands = {}, {}
  for _, path in ipairs(c.files or {}) do
    table.insert(by_command[path] and commands or tools, path)
  end
  local parts = {}
  if #tools > 0 then
    table.insert(parts, list_paths(tools))
  end
  if #commands > 0 then
    table.insert(parts, "by commands: " .. list_paths(commands))
  end
  if c.notCaptured and #c.notCaptured > 0 then
    table.insert(parts, "not captured: " .. list_paths(c.notCaptured))
  end
  if c.externalTools and #c.externalTools > 0 then
    table.insert(parts, "MCP tools: " .. list_paths(c.externalTools))
  end
  return #parts > 0 and (" [" .. table.concat(parts, "; ") .. "]") or ""
end

function M.checkpoint_label(c)
  local prompt = (c.prompt or ""):gsub("%s+", " ")
  prompt = compat.truncate(prompt, 60)
  return ("#%d  %s  %s%s"):format(c.seq, (c.createdAt or ""):gsub("T", " "):sub(1, 16), prompt, checkpoint_files(c))
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
      table.insert(lines, "  " .. M.checkpoint_label(c))
      local by_command = {}
      for _, file in ipairs(c.fromCommands or {}) do
        by_command[file] = true
      end
      for _, file in ipairs(c.files or {}) do
        table.insert(qf, {
          filename = vim.fs.joinpath and vim.fs.joinpath(inst.root, file) or (inst.root .. "/" .. file),
          lnum = 1,
          text = ("checkpoint #%d%s: %s"):format(
            c.seq,
            by_command[file] and " (by a command)" or "",
            (c.prompt or ""):gsub("%s+", " ")
          ),
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

--- The notes of a restore's or undo's result, as { text, hl, level } (level:
--- for vim.notify): what it did, then the open buffers it could not bring back,
--- the files it left as they are (conflicts; `hint` says how to overwrite them)
--- and what commands changed that it could not put back (notCaptured).
function M.restore_notes(verb, result, count_key, since, hint)
  local files = result.restoredFiles or {}
  local count = result[count_key] or 0
  local notes = {
    {
      text = ("⟲ %s: %d file%s%s, %d event%s"):format(
        verb,
        #files,
        #files == 1 and "" or "s",
        #files > 0 and (" (" .. list_paths(files) .. ")") or "",
        count,
        count == 1 and "" or "s"
      ),
      hl = "AgentHostFooter",
      level = vim.log.levels.INFO,
    },
  }
  local unreverted = result.unrevertedBuffers or {}
  if #unreverted > 0 then
    table.insert(notes, {
      text = "  ! these open buffers could not be brought back (their files were): " .. table.concat(unreverted, ", "),
      hl = "AgentHostError",
      level = vim.log.levels.WARN,
    })
  end
  local conflicts = result.conflicts or {}
  if #conflicts > 0 then
    local one = #conflicts == 1
    local text = ("  ! %d file%s changed since %s %s and %s left as %s: %s"):format(
      #conflicts,
      one and "" or "s",
      since,
      one and "it" or "them",
      one and "was" or "were",
      one and "it is" or "they are",
      list_paths(conflicts)
    )
    if hint then
      text = text .. "\n    to overwrite " .. (one and "it" or "them") .. ": " .. hint
    end
    table.insert(notes, { text = text, hl = "AgentHostWarn", level = vim.log.levels.WARN })
  end
  local not_captured = result.notCaptured or {}
  if #not_captured > 0 then
    local one = #not_captured == 1
    table.insert(notes, {
      text = ("  · %d path%s changed through commands but %s not captured (ignored, or over the size cap),"
        .. " so %s not restored: %s"):format(
        #not_captured,
        one and "" or "s",
        one and "was" or "were",
        one and "it was" or "they were",
        list_paths(not_captured)
      ),
      hl = "AgentHostNote",
      level = vim.log.levels.INFO,
    })
  end
  return notes
end

local function report(inst, notes)
  for _, n in ipairs(notes) do
    chat.note(inst, n.text, n.hl)
    local text = n.text:gsub("^%s*[!·]%s*", "") -- the chat's markers, not the message's
    notify(text, n.level)
  end
end

--- Restore to checkpoint `seq`; mode "both" | "files" | "conversation".
--- opts.force: overwrite the files changed since the agent last wrote them
--- (without it they are left as they are and listed as conflicts).
function M.restore(seq, mode, on_done, opts)
  local force = opts and opts.force or false
  local inst = util.current()
  if not util.require_session(inst) or not util.require_idle(inst, "restoring") then
    return
  end
  local name = mode or "both"
  local m = util.api().restore_modes[name]
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
    force = force or nil, -- sent only when set
  }, function(err, result)
    inst.busy = nil
    inst.activity = nil
    client.changed()
    if err then
      return fail("session/restore")(err)
    end
    local function done()
      local verb = ("restored to #%d (%s%s)"):format(seq, m.label, force and ", overwriting changed files" or "")
      -- an undo is exact: undo, then the same restore with ! overwrites the conflicts
      local hint = (":AgentUndoRestore, then :AgentRestore! %d %s"):format(seq, name)
      report(inst, M.restore_notes(verb, result, "removedEvents", "the agent last wrote", hint))
      if on_done then
        on_done(result)
      end
    end
    if m.conversation then
      refresh_history(inst, done) -- the chat shows the conversation as it now is
    else
      done()
    end
  end)
end

--- Pick a checkpoint, then what to restore, then restore (opts as for restore).
function M.restore_pick(seq, mode, on_done, opts)
  local inst = util.current()
  if not util.require_session(inst) then
    return
  end
  local function pick_mode(chosen)
    if mode then
      return util.api().restore(chosen, mode, on_done, opts)
    end
    local modes = { "both", "files", "conversation" }
    vim.ui.select(modes, {
      prompt = ("agent-host: restore #%d%s"):format(chosen, opts and opts.force and ", overwriting changed files" or ""),
      kind = "agent_host.restore_mode",
      format_item = function(k)
        return util.api().restore_modes[k].label
      end,
    }, function(choice)
      if choice then
        util.api().restore(chosen, choice, on_done, opts)
      end
    end)
  end
  if seq then
    return pick_mode(seq)
  end
  M.pick(inst, { prompt = "agent-host: restore to just before" }, function(choice)
    pick_mode(choice.seq)
  end)
end

--- Pick one of the current session's checkpoints with vim.ui.select (kind
--- "agent_host.checkpoint", oldest first), then on_choice(checkpoint). The
--- strings of opts.extra are offered after the checkpoints (on_choice gets the
--- string); without checkpoints or extras there is nothing to pick.
---@param opts {prompt: string, extra?: string[]}
function M.pick(inst, opts, on_choice)
  checkpoints(inst, function(list)
    local items = vim.list_extend({}, list)
    vim.list_extend(items, opts.extra or {})
    if #items == 0 then
      notify("the session has no checkpoints")
      return
    end
    vim.ui.select(items, {
      prompt = opts.prompt,
      kind = "agent_host.checkpoint",
      format_item = function(item)
        return type(item) == "string" and item or M.checkpoint_label(item)
      end,
    }, function(choice)
      if choice then
        on_choice(choice)
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
      -- no hint: an undo puts back what the restore found, it has nothing to force
      report(inst, M.restore_notes("restore undone", result, "restoredEvents", "the restore wrote"))
      if on_done then
        on_done(result)
      end
    end)
  end)
end

return M
