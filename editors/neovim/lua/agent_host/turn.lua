-- A turn: :AgentSend (with its selection as context), :AgentCancel, and
-- closing running turns when Neovim exits.
local chat = require("agent_host.chat")
local client = require("agent_host.client")
local compat = require("agent_host.compat")
local config = require("agent_host.config")
local util = require("agent_host.util")

local notify, error_message = util.notify, util.error_message

local M = {}

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
      local report = on_error or util.fail("session/new")
      report(err)
      return
    end
    inst.session_id = result.sessionId
    client.changed()
    then_(inst.session_id)
  end)
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
  local inst = util.current()
  if type(prompt) ~= "string" or vim.trim(prompt) == "" then
    notify("the prompt is empty", vim.log.levels.WARN)
    return
  end
  if not util.require_idle(inst, "sending another prompt") then
    return
  end
  local turn = { prompt = prompt, started = vim.uv.now(), phase = "starting" }
  inst.turn = turn
  inst.calls = {}
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
    if inst.unprompted and inst.unprompted.sessionId == session_id then
      inst.unprompted = nil -- stored from this prompt on: session/list has it
    end
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
      if err then
        client.finish_turn(inst, turn)
        chat.note(inst, "— error: " .. error_message(err), "AgentHostError")
        notify(error_message(err), vim.log.levels.ERROR)
        done(err, nil)
        return
      end
      -- false: the server sent null, the session's cost is unknown (nil: no turn yet)
      inst.total_cost = type(result.totalCost) == "number" and result.totalCost or false
      inst.last_result = result
      chat.footer(inst, result)
      -- the turn ends once its changed files are listed, so that they come
      -- under it, not in the middle of the next one
      require("agent_host.diffs").list_turn(inst, result.checkpoint, function()
        if inst.turn ~= turn then
          return -- the server exited meanwhile: the turn was closed then
        end
        client.finish_turn(inst, turn)
        done(nil, result)
      end)
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
  local inst = util.current()
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

-- exit -----------------------------------------------------------------------

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

return M
