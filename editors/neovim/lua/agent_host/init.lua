-- agent-host for Neovim: the editor client of `agent-host serve`.
--
--   require("agent_host").setup({ model = "openai/gpt-4.1-mini", approval = "auto-edit" })
--
-- See :help agent-host.
local chat = require("agent_host.chat")
local client = require("agent_host.client")
local compat = require("agent_host.compat")
local config = require("agent_host.config")

local M = {}

M.did_setup = false

local function notify(msg, level)
  vim.notify("agent-host: " .. msg, level or vim.log.levels.INFO)
end

local function error_message(err)
  if type(err) == "table" then
    return err.message or vim.inspect(err)
  end
  return tostring(err)
end

local function fail(what)
  return function(err)
    notify(("%s failed: %s"):format(what, error_message(err)), vim.log.levels.ERROR)
  end
end

--- The instance for the current buffer's root (server started if needed).
function M.current()
  if not M.did_setup then
    M.setup({ autostart = false })
  end
  return client.ensure(client.root_for(0))
end

--- The current session, created with session/new if there is none.
local function with_session(inst, title, then_, on_error)
  if inst.session_id then
    then_(inst.session_id)
    return
  end
  -- the server shortens it further for lists
  title = compat.truncate(vim.trim(((title or ""):gsub("%s+", " "))), 200)
  local params = title ~= "" and { title = title } or vim.empty_dict()
  client.request(inst, "session/new", params, function(err, result)
    if err then
      local report = on_error or fail("session/new")
      report(err)
      return
    end
    inst.session_id = result.sessionId
    client.changed()
    then_(inst.session_id)
  end)
end

local function require_session(inst)
  if not inst.session_id then
    notify("no session yet: :AgentSend a prompt or :AgentSessions to resume one", vim.log.levels.WARN)
    return false
  end
  return true
end

local function require_idle(inst, what)
  if inst.turn then
    notify(("a turn is running; wait for it or :AgentCancel before %s"):format(what), vim.log.levels.WARN)
    return false
  end
  if inst.busy then
    notify(("%s is running; wait for it before %s"):format(inst.busy.what, what), vim.log.levels.WARN)
    return false
  end
  return true
end

-- :AgentSend ----------------------------------------------------------------

--- The selected text of the current buffer as a context item {text, uri}.
--- `range` is {line1, line2} from a command range; a visual selection on
--- those lines is used character-wise.
function M.selection_context(bufnr, line1, line2)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local lines
  local vstart, vend = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  local mode = vim.fn.visualmode()
  if vstart[2] == line1 and vend[2] == line2 and mode ~= "" and vim.fn.getregion then
    local ok, region = pcall(vim.fn.getregion, vstart, vend, { type = mode })
    if ok then
      lines = region
    end
  end
  if not lines then
    lines = vim.api.nvim_buf_get_lines(bufnr, line1 - 1, line2, false)
  end
  local item = { text = table.concat(lines, "\n") }
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name ~= "" and vim.bo[bufnr].buftype == "" then
    item.uri = vim.uri_from_bufnr(bufnr)
  end
  return item
end

--- Send a prompt in the current session (a new one if there is none).
---@param prompt string
---@param opts? {context?: {text: string, uri?: string}[], on_done?: fun(err, result)}
function M.send(prompt, opts)
  opts = opts or {}
  local inst = M.current()
  if type(prompt) ~= "string" or vim.trim(prompt) == "" then
    notify("the prompt is empty", vim.log.levels.WARN)
    return
  end
  if not require_idle(inst, "sending another prompt") then
    return
  end
  local turn = { prompt = prompt, started = vim.uv.now(), phase = "starting" }
  inst.turn = turn
  inst.activity = "starting"
  client.changed()
  if config.options.chat.open_on_send ~= false then
    chat.open(inst, false)
  end
  chat.prompt(inst, prompt, opts.context)
  local function done(err, result)
    if opts.on_done then
      pcall(opts.on_done, err, result)
    end
  end
  -- told when the turn is given up without an answer (abandoned, server gone)
  turn.done = done
  with_session(inst, prompt, function(session_id)
    if inst.turn ~= turn or turn.cancelled_early then
      -- cancelled before the prompt went out
      client.finish_turn(inst, turn)
      chat.note(inst, "— cancelled before it was sent", "AgentHostFooter")
      done(nil, nil)
      return
    end
    turn.session_id = session_id
    turn.phase = "running"
    inst.activity = "thinking"
    client.changed()
    local params = { sessionId = session_id, prompt = prompt }
    if opts.context and #opts.context > 0 then
      params.context = opts.context
    end
    local handle = client.request(inst, "session/send", params, function(err, result)
      if inst.turn ~= turn then
        return -- abandoned by :AgentCancel; cleaned up then
      end
      client.finish_turn(inst, turn)
      if err then
        chat.note(inst, "— error: " .. error_message(err), "AgentHostError")
        notify(error_message(err), vim.log.levels.ERROR)
        done(err, nil)
        return
      end
      inst.total_cost = result.totalCost
      inst.last_result = result
      chat.footer(inst, result)
      client.changed()
      done(nil, result)
    end)
    turn.handle = handle
  end, function(err)
    client.finish_turn(inst, turn)
    chat.note(inst, "— could not start a session: " .. error_message(err), "AgentHostError")
    notify("session/new failed: " .. error_message(err), vim.log.levels.ERROR)
    done(err, nil)
  end)
end

-- :AgentCancel ---------------------------------------------------------------

--- Cancel the running turn (or compaction).
---
--- session/cancel is sent at once and again every cancel_retry_ms until the
--- turn answers (a cancel that reaches the server before the turn started does
--- nothing); the turn then answers normally with stopReason "cancelled". If no
--- answer comes within cancel_timeout_ms, the request is abandoned with
--- $/cancelRequest -- whose callback Neovim never calls -- so everything is
--- cleaned up here, at cancel time.
function M.cancel()
  local inst = M.current()
  local turn = inst.turn
  if not turn then
    if inst.busy and inst.busy.handle and inst.busy.handle.request_id then
      local busy = inst.busy
      local c = client.client(inst)
      if c then
        compat.cancel_request(c, busy.handle.request_id)
      end
      inst.busy = nil
      chat.note(inst, ("— %s cancelled"):format(busy.what), "AgentHostFooter")
      client.changed()
      return
    end
    notify("nothing is running")
    return
  end
  if not turn.session_id then
    turn.cancelled_early = true
    inst.activity = "cancelling"
    client.changed()
    return
  end
  if turn.cancelling then
    return
  end
  turn.cancelling = true
  inst.activity = "cancelling"
  client.changed()
  client.notify(inst, "session/cancel", { sessionId = turn.session_id })
  local waited = 0
  local every = config.options.cancel_retry_ms or 1000
  local limit = config.options.cancel_timeout_ms or 10000
  turn.timer = vim.uv.new_timer()
  turn.timer:start(every, every, vim.schedule_wrap(function()
    if inst.turn ~= turn then
      return
    end
    waited = waited + every
    if waited < limit then
      client.notify(inst, "session/cancel", { sessionId = turn.session_id })
      return
    end
    -- no answer: abandon the request; its callback will never run
    local c = client.client(inst)
    if c and turn.handle and turn.handle.request_id then
      compat.cancel_request(c, turn.handle.request_id)
    end
    client.finish_turn(inst, turn)
    chat.note(inst, "— cancelled (the server did not answer; request abandoned)", "AgentHostFooter")
    turn.done({ code = -32800, message = "cancelled; the server did not answer, the request was abandoned" }, nil)
  end))
end

-- sessions ---------------------------------------------------------------

--- Start a new session (the next prompt goes there).
function M.new_session(title, on_done)
  local inst = M.current()
  if not require_idle(inst, "starting a session") then
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
  local inst = M.current()
  if not require_session(inst) then
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

local function session_label(s)
  local title = (s.title or ""):gsub("%s+", " ")
  title = compat.truncate(title, 60)
  return ("%s  (%d turn%s, %s)  %s"):format(
    title ~= "" and title or "(untitled)",
    s.turns or 0,
    s.turns == 1 and "" or "s",
    (s.updatedAt or ""):gsub("T", " "):sub(1, 16),
    s.sessionId
  )
end

--- Resume a session by id: it becomes current and its history is shown.
function M.resume(session_id, on_done)
  local inst = M.current()
  if not require_idle(inst, "switching sessions") then
    return
  end
  client.request(inst, "session/resume", { sessionId = session_id }, function(err, result)
    if err then
      return fail("session/resume")(err)
    end
    inst.session_id = result.sessionId
    inst.total_cost = nil
    client.changed()
    notify(("resumed %s (%d turn%s)"):format(result.sessionId, result.turns or 0, result.turns == 1 and "" or "s"))
    M.history(function()
      if on_done then
        on_done(result)
      end
    end)
  end)
end

--- Pick a stored session with vim.ui.select and resume it.
function M.sessions(on_done)
  local inst = M.current()
  client.request(inst, "session/list", vim.empty_dict(), function(err, result)
    if err then
      return fail("session/list")(err)
    end
    local sessions = result.sessions or {}
    if #sessions == 0 then
      notify("no stored sessions")
      return
    end
    vim.ui.select(sessions, {
      prompt = "agent-host: resume session",
      kind = "agent_host.session",
      format_item = session_label,
    }, function(choice)
      if choice then
        M.resume(choice.sessionId, on_done)
      end
    end)
  end)
end

-- checkpoints ------------------------------------------------------------

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
  local inst = M.current()
  if not require_session(inst) then
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
end

--- Restore to checkpoint `seq`; mode "both" | "files" | "conversation".
function M.restore(seq, mode, on_done)
  local inst = M.current()
  if not require_session(inst) or not require_idle(inst, "restoring") then
    return
  end
  local m = M.restore_modes[mode or "both"]
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
  local inst = M.current()
  if not require_session(inst) then
    return
  end
  local function pick_mode(chosen)
    if mode then
      return M.restore(chosen, mode, on_done)
    end
    local modes = { "both", "files", "conversation" }
    vim.ui.select(modes, {
      prompt = ("agent-host: restore #%d"):format(chosen),
      kind = "agent_host.restore_mode",
      format_item = function(k)
        return M.restore_modes[k].label
      end,
    }, function(choice)
      if choice then
        M.restore(chosen, choice, on_done)
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
  local inst = M.current()
  if not require_session(inst) or not require_idle(inst, "undoing a restore") then
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

--- Summarise the older part of the conversation.
function M.compact(instructions, on_done)
  local inst = M.current()
  if not require_session(inst) or not require_idle(inst, "compacting") then
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
    chat.note(inst, text, "AgentHostFooter")
    notify(text)
    if on_done then
      on_done(result)
    end
  end)
end

-- status -----------------------------------------------------------------

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
  local cost = inst.total_cost and (" · $%.4f"):format(inst.total_cost) or ""
  return ("agent-host: %s%s"):format(state, cost)
end

--- On VimLeavePre: cancel running turns and wait (bounded by exit_wait_ms)
--- for their answers, which come once each turn is closed in its log. Neovim
--- only sends shutdown on its way out and does not wait, so a turn still
--- running then could be cut off with the server.
function M.close_turns_on_exit()
  local waiting = {}
  for _, inst in pairs(client.instances) do
    local turn = inst.turn
    if turn and turn.session_id then
      pcall(client.notify, inst, "session/cancel", { sessionId = turn.session_id })
      table.insert(waiting, inst)
    end
  end
  if #waiting == 0 then
    return
  end
  vim.wait(config.options.exit_wait_ms or 3000, function()
    for _, inst in ipairs(waiting) do
      if inst.turn then
        return false
      end
    end
    return true
  end, 20)
end

--- Stop the server(s) (all roots, or the given one).
function M.stop(root)
  client.stop(root)
end

-- setup ----------------------------------------------------------------------

function M.create_commands()
  require("agent_host.commands").create()
end

local function set_highlights()
  local links = {
    AgentHostTitle = "Title",
    AgentHostHeader = "Title",
    AgentHostTool = "Function",
    AgentHostOk = "DiagnosticOk",
    AgentHostError = "DiagnosticError",
    AgentHostAsk = "DiagnosticWarn",
    AgentHostNote = "Comment",
    AgentHostFooter = "Comment",
    AgentHostContext = "Comment",
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

function M.setup(opts)
  opts = opts or {}
  local autostart = opts.autostart
  config.set(opts)
  M.did_setup = true
  M.create_commands()
  set_highlights()
  local group = vim.api.nvim_create_augroup("agent_host", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufFilePost", "BufWritePost" }, {
    group = group,
    desc = "agent-host: let the server see the buffers of its workspace",
    callback = function(ev)
      client.attach(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = set_highlights })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    desc = "agent-host: let running turns close in their logs before Neovim exits",
    callback = M.close_turns_on_exit,
  })
  if autostart ~= false and config.options.autostart ~= false then
    client.ensure(client.root_for(0))
  end
  return M
end

return M
