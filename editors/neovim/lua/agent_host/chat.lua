-- The chat buffer: one per workspace root, filetype "agent-host".
--
-- Shows each prompt, the answer as it streams (session/event text_delta),
-- tool calls and their results, and the turn's cost.
local compat = require("agent_host.compat")
local config = require("agent_host.config")
local chat_lines = require("agent_host.chat_lines")
local permission = require("agent_host.permission")

local M = {}

local ns = vim.api.nvim_create_namespace("agent_host_chat")

local function valid(buf)
  return buf and vim.api.nvim_buf_is_valid(buf)
end

--- The chat buffer of an instance, created on first use.
function M.buffer(inst)
  if valid(inst.chat_buf) then
    return inst.chat_buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  local name = "agent-host://chat" .. (vim.startswith(inst.root, "/") and "" or "/") .. inst.root
  -- a second Neovim instance may be wiping a buffer of that name: tolerate
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.b[buf].agent_host_root = inst.root
  vim.bo[buf].filetype = "agent-host"
  inst.chat_buf = buf
  vim.api.nvim_create_autocmd("BufWinEnter", {
    buffer = buf,
    desc = "agent-host: fold tool outputs in chat windows",
    callback = function()
      chat_lines.window_options(vim.api.nvim_get_current_win())
    end,
  })
  for _, key in ipairs(chat_lines.KEYS) do
    vim.keymap.set("n", key, function()
      chat_lines.activate(inst, key)
    end, { buffer = buf, desc = "agent-host: this line's action (<CR>: its diff or output, U: undo the file)" })
  end
  return buf
end

--- The window showing the chat in the current tab, if any.
function M.window(inst)
  if not valid(inst.chat_buf) then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == inst.chat_buf then
      return win
    end
  end
  return nil
end

local function size(value, total)
  if value <= 1 then
    return math.max(10, math.floor(total * value))
  end
  return math.floor(value)
end

--- Give chat line `row` (0-based) actions {[key] = fn} (see chat_lines).
M.set_action = chat_lines.set_action

--- Show the chat (in a split) without leaving the current window unless
--- `focus`.
function M.open(inst, focus)
  local buf = M.buffer(inst)
  local win = M.window(inst)
  if not win then
    local opts = config.options.chat
    local position = opts.position or "right"
    local ok, opened
    if position == "tab" then
      local current = vim.api.nvim_get_current_win()
      ok, opened = pcall(function()
        vim.cmd("tab sbuffer " .. buf)
        return vim.api.nvim_get_current_win()
      end)
      if ok and not focus and vim.api.nvim_win_is_valid(current) then
        vim.api.nvim_set_current_win(current)
      end
    else
      local split = ({ right = "right", left = "left", bottom = "below", top = "above" })[position] or "right"
      local vertical = split == "right" or split == "left"
      local config_ = { split = split, win = -1 }
      if vertical then
        config_.width = size(opts.size or 0.4, vim.o.columns)
      else
        config_.height = size(opts.size or 0.4, vim.o.lines)
      end
      ok, opened = pcall(vim.api.nvim_open_win, buf, focus and true or false, config_)
    end
    if not ok then
      vim.notify("agent-host: could not open the chat window: " .. tostring(opened), vim.log.levels.WARN)
      return nil
    end
    win = opened
    chat_lines.window_options(win)
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
    vim.wo[win].number = false
    vim.wo[win].relativenumber = false
    vim.wo[win].spell = false
    vim.wo[win].signcolumn = "no"
    vim.wo[win].winfixwidth = position == "right" or position == "left"
    M.scroll(inst)
  elseif focus then
    vim.api.nvim_set_current_win(win)
  end
  return win
end

--- Keep windows that were at the end of the chat at its end.
function M.scroll(inst, was_at_end)
  local buf = inst.chat_buf
  if not valid(buf) then
    return
  end
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if was_at_end == nil or was_at_end[win] ~= false then
      local line = vim.api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ""
      pcall(vim.api.nvim_win_set_cursor, win, { last, #line })
    end
  end
end

local function at_end(buf)
  local state = {}
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    -- the focused chat window follows only if its cursor is on the last line
    state[win] = win ~= vim.api.nvim_get_current_win() or vim.api.nvim_win_get_cursor(win)[1] >= last
  end
  return state
end

local function edit(inst, fn)
  local buf = M.buffer(inst)
  local follow = at_end(buf)
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn, buf)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  M.scroll(inst, follow)
  if not ok then
    error(err)
  end
end

local function is_empty(buf)
  return vim.api.nvim_buf_line_count(buf) == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ""
end

--- Append text to the last line (streamed text: may contain line breaks).
function M.append_text(inst, text)
  if text == nil or text == "" then
    return
  end
  edit(inst, function(buf)
    local pieces = vim.split(text, "\n", { plain = true })
    local count = vim.api.nvim_buf_line_count(buf)
    local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
    if inst._streaming or last == "" then
      pieces[1] = last .. pieces[1]
      vim.api.nvim_buf_set_lines(buf, count - 1, count, false, pieces)
    else
      -- after a tool line, a header or a note: text starts a line of its own
      vim.api.nvim_buf_set_lines(buf, count, count, false, pieces)
    end
  end)
  inst._streaming = true
end

--- Append whole lines, starting on a new line; `hl` highlights them.
--- Returns the (0-based) row of the first.
function M.append_lines(inst, lines, hl)
  if type(lines) == "string" then
    lines = vim.split(lines, "\n", { plain = true })
  end
  inst._streaming = false
  local row
  edit(inst, function(buf)
    local first
    if is_empty(buf) then
      vim.api.nvim_buf_set_lines(buf, 0, 1, false, lines)
      first = 0
    else
      local count = vim.api.nvim_buf_line_count(buf)
      local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
      if last == "" then
        vim.api.nvim_buf_set_lines(buf, count - 1, count, false, lines)
        first = count - 1
      else
        vim.api.nvim_buf_set_lines(buf, count, count, false, lines)
        first = count
      end
    end
    if hl then
      for i, line in ipairs(lines) do
        if line ~= "" then
          vim.api.nvim_buf_set_extmark(buf, ns, first + i - 1, 0, { end_col = #line, hl_group = hl })
        end
      end
    end
    row = first
  end)
  return row
end

--- Start a block after a blank line.
function M.section(inst, lines, hl)
  local buf = M.buffer(inst)
  if not is_empty(buf) then
    edit(inst, function(b)
      local count = vim.api.nvim_buf_line_count(b)
      local last = vim.api.nvim_buf_get_lines(b, count - 1, count, false)[1] or ""
      -- one blank line, then an empty line the block replaces
      vim.api.nvim_buf_set_lines(b, count, count, false, last == "" and { "" } or { "", "" })
    end)
  end
  M.append_lines(inst, lines, hl)
end

function M.clear(inst, title)
  edit(inst, function(buf)
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    chat_lines.clear_actions(inst)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "" })
  end)
  if title then
    M.append_lines(inst, { title }, "AgentHostTitle")
  end
end

--- The first line of `text` (at most `max` characters) and all its lines.
local function first_line(text, max)
  text = tostring(text or "")
  local lines = vim.split(text, "\n", { plain = true, trimempty = true })
  local line = compat.truncate(lines[1] or "", max)
  if #lines > 1 then
    line = ("%s (+%d lines)"):format(line, #lines - 1)
  end
  return line, lines
end

--- A summary line, and when it does not show all of the output, the whole
--- output under it, which the chat window folds (closed).
local function output_block(inst, summary, lines, hl)
  local block = { summary }
  if #lines > 1 or (lines[1] and not vim.endswith(summary, lines[1])) then
    for _, line in ipairs(lines) do
      table.insert(block, chat_lines.OUTPUT_PREFIX .. line)
    end
  end
  M.append_lines(inst, block, hl)
end


function M.prompt(inst, prompt, context)
  M.section(inst, { "## You" }, "AgentHostHeader")
  M.append_lines(inst, vim.split(prompt, "\n", { plain = true }))
  for _, item in ipairs(context or {}) do
    local where = item.uri and vim.uri_to_fname(item.uri) or "selection"
    local n = #vim.split(item.text or "", "\n", { plain = true })
    M.append_lines(inst, { ("> context: %s (%d line%s)"):format(vim.fn.fnamemodify(where, ":~:."), n, n == 1 and "" or "s") }, "AgentHostContext")
  end
  M.section(inst, { "## Agent" }, "AgentHostHeader")
end

--- The output the engine gives a tool call that was not allowed.
local DENIED = "Permission denied"

function M.tool_call(inst, data)
  if data.callId then
    -- what its result names (a rejected call)
    inst.calls = inst.calls or {}
    inst.calls[data.callId] = data
  end
  M.append_lines(inst, { "▸ " .. permission.describe(data.name or "?", data.arguments) }, "AgentHostTool")
end

function M.tool_result(inst, data)
  local call = data.callId and inst.calls and inst.calls[data.callId]
  local summary, lines = first_line(data.output, 100)
  if data.isError and call and vim.startswith(lines[1] or "", DENIED) then
    -- several calls of one tool may be waiting: say which one was refused
    summary = "rejected: " .. permission.describe(call.name or "?", call.arguments)
  end
  local mark = data.isError and "  ✗ " or "  ✓ "
  output_block(inst, mark .. summary, lines, data.isError and "AgentHostError" or "AgentHostOk")
end

function M.note(inst, text, hl)
  M.append_lines(inst, vim.split(text, "\n", { plain = true }), hl or "AgentHostNote")
end

--- "$0.0123"; "$—" for a cost the server sent as null (unknown: it has no
--- price for the model), which "$0.0000" would pass off as free.
function M.money(x)
  return type(x) == "number" and ("$%.4f"):format(x) or "$—"
end

function M.footer(inst, result)
  local usage = result.usage or {}
  M.append_lines(inst, {
    ("— %s · %d in / %d out tokens · %s (session %s)"):format(
      result.stopReason or "?",
      tonumber(usage.inputTokens) or 0,
      tonumber(usage.outputTokens) or 0,
      M.money(result.cost),
      M.money(result.totalCost)
    ),
  }, "AgentHostFooter")
end

--- Render session/history messages (OpenAI chat format).
function M.history(inst, session_id, messages)
  M.clear(inst, "# Session " .. session_id)
  for _, message in ipairs(messages or {}) do
    local content = message.content
    if type(content) == "table" then
      local parts = {}
      for _, part in ipairs(content) do
        table.insert(parts, type(part) == "table" and (part.text or "") or tostring(part))
      end
      content = table.concat(parts, "\n")
    end
    content = type(content) == "string" and content or ""
    if message.role == "user" and vim.startswith(content, "Summary of the conversation so far") then
      -- a compaction's summary, standing in for the messages it covers
      M.section(inst, { "## Summary" }, "AgentHostHeader")
      M.append_lines(inst, vim.split(content, "\n", { plain = true }), "AgentHostNote")
    elseif message.role == "user" then
      M.section(inst, { "## You" }, "AgentHostHeader")
      M.append_lines(inst, vim.split(content, "\n", { plain = true }))
    elseif message.role == "assistant" then
      if inst._history_last_role ~= "assistant" and inst._history_last_role ~= "tool" then
        M.section(inst, { "## Agent" }, "AgentHostHeader")
      end
      if content ~= "" then
        M.append_lines(inst, vim.split(content, "\n", { plain = true }))
      end
      for _, call in ipairs(message.tool_calls or {}) do
        local fn = call["function"] or {}
        local ok, args = pcall(vim.json.decode, fn.arguments or "{}")
        M.tool_call(inst, { name = fn.name, arguments = ok and args or {} })
      end
    elseif message.role == "tool" then
      local summary, lines = first_line(content, 100)
      output_block(inst, "  · " .. summary, lines, "AgentHostNote")
    elseif message.role == "system" then
      M.section(inst, { "## Summary" }, "AgentHostHeader")
      M.append_lines(inst, vim.split(content, "\n", { plain = true }))
    end
    inst._history_last_role = message.role
  end
  inst._history_last_role = nil
end

return M
