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
  -- What ran outside the sandbox (only then can anything outside the workspace
  -- have changed); a server from before the sandbox sends none: every MCP tool may have.
  local unconfined = c.unconfined or c.externalTools or {}
  if #unconfined > 0 then
    table.insert(parts, "without the sandbox: " .. list_paths(unconfined))
  end
  return #parts > 0 and (" [" .. table.concat(parts, "; ") .. "]") or ""
end

--- A checkpoint's number as users see it: 1 for the session's first prompt
--- (its `ordinal`; before servers sent one, its place in the list).
function M.number(c)
  if type(c.ordinal) == "number" and c.ordinal > 0 then
    return c.ordinal
  end
  return c._place or c.seq
end

--- "3 · add a test  2026-12-02 09:30 [a.py]".
function M.checkpoint_label(c)
  local prompt = (c.prompt or ""):gsub("%s+", " ")
  prompt = compat.truncate(prompt, 60)
  return ("%d · %s  %s%s"):format(M.number(c), prompt, (c.createdAt or ""):gsub("T", " "):sub(1, 16), checkpoint_files(c))
end

local function checkpoints(inst, fn)
  client.request(inst, "session/checkpoints", { sessionId = inst.session_id }, function(err, result)
    if err then
      return fail("session/checkpoints")(err)
    end
    local list = result.checkpoints or {}
    for i, c in ipairs(list) do
      c._place = i
    end
    fn(list)
  end)
end

--- The current session's checkpoints, oldest first: fn(list).
M.list = checkpoints

--- The checkpoint numbered `number` (as M.number) of the current session;
--- fn(checkpoint), or a message when there is none.
function M.find(inst, number, fn)
  checkpoints(inst, function(list)
    for _, c in ipairs(list) do
      if M.number(c) == number then
        return fn(c)
      end
    end
    notify(("no checkpoint %d (:AgentCheckpoints lists them)"):format(number), vim.log.levels.ERROR)
  end)
end

--- The first changed line of each file of each checkpoint's turn, from
--- session/changes: fn({[seq] = {[path] = line}}). A turn whose changes
--- can't be had (a server without session/changes) has none: line 1.
local function changed_lines(inst, list, fn)
  local diffs = require("agent_host.diffs")
  local found, waiting = {}, 0
  local function finish()
    if waiting == 0 then
      fn(found)
    end
  end
  for _, c in ipairs(list) do
    if #(c.files or {}) > 0 then
      waiting = waiting + 1
      diffs.changes(inst, { seq = c.seq }, function(files)
        found[c.seq] = {}
        for _, file in ipairs(files or {}) do
          found[c.seq][file.path] = diffs.first_changed_line(file)
        end
        waiting = waiting - 1
        finish()
      end)
    end
  end
  finish()
end

--- One quickfix item per file each checkpoint's turn changed, at its first
--- changed line.
local function quickfix_items(inst, list, lines_of)
  local qf = {}
  for _, c in ipairs(list) do
    local by_command = {}
    for _, file in ipairs(c.fromCommands or {}) do
      by_command[file] = true
    end
    for _, file in ipairs(c.files or {}) do
      table.insert(qf, {
        filename = vim.fs.joinpath(inst.root, file),
        lnum = (lines_of[c.seq] or {})[file] or 1,
        text = ("checkpoint %d%s: %s"):format(
          M.number(c),
          by_command[file] and " (by a command)" or "",
          (c.prompt or ""):gsub("%s+", " ")
        ),
      })
    end
  end
  return qf
end

--- List the current session's checkpoints in the chat buffer and the
--- quickfix list (one entry per changed file, at its first changed line).
function M.checkpoints(on_done)
  local inst = util.current()
  if not util.require_session(inst) then
    return
  end
  checkpoints(inst, function(list)
    local lines = { ("Checkpoints of %s (:AgentRestore to go back to one):"):format(inst.session_id) }
    for _, c in ipairs(list) do
      table.insert(lines, "  " .. M.checkpoint_label(c))
    end
    if #list == 0 then
      table.insert(lines, "  (none yet)")
    end
    chat.section(inst, lines, "AgentHostNote")
    chat.open(inst, false)
    changed_lines(inst, list, function(lines_of)
      vim.fn.setqflist({}, " ", { title = "agent-host checkpoints", items = quickfix_items(inst, list, lines_of) })
      if on_done then
        on_done(list)
      end
    end)
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

--- "1 file", "3 messages".
function M.count(n, noun)
  return ("%d %s%s"):format(n, noun, n == 1 and "" or "s")
end

--- The notes of a restore's or undo's result, as { text, hl, level } (level:
--- for vim.notify): what it did, then the open buffers it could not bring back,
--- the files it left as they are (conflicts; `hint` says how to overwrite them)
--- what commands changed that it could not put back (notCaptured), and what ran
--- without the sandbox, whose changes outside the workspace stay (unconfined).
function M.restore_notes(verb, result, since, hint, counted)
  local files = result.restoredFiles or {}
  local notes = {
    {
      text = ("⟲ %s: %s%s%s"):format(
        verb,
        M.count(#files, "file"),
        #files > 0 and (" (" .. list_paths(files) .. ")") or "",
        counted and (", " .. counted) or ""
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
  local unconfined = result.unconfined or {}
  if #unconfined > 0 then
    local shown = vim.tbl_map(function(u)
      return compat.truncate((u:gsub("%s+", " ")), 60)
    end, unconfined)
    table.insert(notes, {
      text = "  ! ran without the sandbox: " .. list_paths(shown)
        .. "; what they changed outside the workspace was not undone",
      hl = "AgentHostWarn",
      level = vim.log.levels.WARN,
    })
  end
  return notes
end

function M.report(inst, notes)
  for _, n in ipairs(notes) do
    chat.note(inst, n.text, n.hl)
    local text = n.text:gsub("^%s*[!·]%s*", "") -- the chat's markers, not the message's
    notify(text, n.level)
  end
end

--- Restore to checkpoint `seq`; mode "both" | "files" | "conversation".
--- opts.force: overwrite the files changed since the agent last wrote them
--- (without it they are left as they are and listed as conflicts);
--- opts.paths: restore only these files (the others are left as they are);
--- opts.label: the checkpoint's number, opts.messages: the messages the
--- preview said it removes, for the notes.
function M.restore(seq, mode, on_done, opts)
  opts = opts or {}
  local force = opts.force or false
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
    paths = opts.paths,
  }, function(err, result)
    inst.busy = nil
    inst.activity = nil
    client.changed()
    if err then
      return fail("session/restore")(err)
    end
    local function done()
      local label = opts.label or ("#" .. seq)
      local verb = ("restored to just before %s (%s%s)"):format(label, m.label, force and ", overwriting changed files" or "")
      -- an undo is exact: undo, then the same restore with ! overwrites the conflicts
      local hint = (":AgentUndoRestore, then :AgentRestore! %s %s"):format(label, name)
      local removed = result.messagesRemoved or opts.messages
      local counted = type(removed) == "number" and M.count(removed, "message") .. " removed" or nil
      M.report(inst, M.restore_notes(verb, result, "the agent last wrote", hint, counted))
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

--- Pick a checkpoint (unless `number`, a checkpoint's number as listed),
--- then what to restore (unless `mode`), then preview the restore in a float
--- where the files to restore are chosen (opts as for restore).
function M.restore_pick(number, mode, on_done, opts)
  opts = opts or {}
  local inst = util.current()
  if not util.require_session(inst) then
    return
  end
  local function pick_mode(c)
    local preview_opts = vim.tbl_extend("force", opts, { label = M.number(c) })
    if mode then
      return util.api().preview(c.seq, mode, on_done, preview_opts)
    end
    local modes = { "both", "files", "conversation" }
    vim.ui.select(modes, {
      prompt = ("agent-host: restore to just before %d%s"):format(M.number(c), opts.force and ", overwriting changed files" or ""),
      kind = "agent_host.restore_mode",
      format_item = function(k)
        return util.api().restore_modes[k].label
      end,
    }, function(choice)
      if choice then
        util.api().preview(c.seq, choice, on_done, preview_opts)
      end
    end)
  end
  if number then
    return M.find(inst, number, pick_mode)
  end
  M.pick(inst, { prompt = "agent-host: restore to just before" }, pick_mode)
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
      M.report(inst, M.restore_notes("restore undone", result, "the restore wrote"))
      if on_done then
        on_done(result)
      end
    end)
  end)
end

return M
