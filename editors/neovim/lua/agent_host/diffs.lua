-- What the agent changed, as diffs: :AgentDiff (a diff tab per file, or with
-- ! a quickfix list of hunks), the changed files listed in the chat after a
-- turn (<CR> opens one's diff), and the changed line of each file for the
-- quickfix list of :AgentCheckpoints. All from session/changes, whose files
-- are FileDiffs: {path, action, oldPath, binary, diff, added, removed,
-- before, after, source}.
local chat = require("agent_host.chat")
local client = require("agent_host.client")
local util = require("agent_host.util")

local notify, fail = util.notify, util.fail

local M = {}

--- session/changes with `params` (seq: one turn; fromSeq[, toSeq]: a range;
--- none: the last turn); fn(files), or fn(nil, err) on failure.
function M.changes(inst, params, fn)
  local full = vim.tbl_extend("force", { sessionId = inst.session_id }, params or {})
  return client.request(inst, "session/changes", full, function(err, result)
    if err then
      return fn(nil, err)
    end
    fn(result.files or {})
  end)
end

--- "modified a.py (+1 −1)", "renamed old.py → new.py", "added logo.png (binary)".
function M.describe(file)
  local name = file.path
  if file.action == "renamed" and type(file.oldPath) == "string" then
    name = file.oldPath .. " → " .. file.path
  end
  local counts = file.binary and "binary" or ("+%d −%d"):format(file.added or 0, file.removed or 0)
  local by = (file.source == "command" or file.source == "mcp") and (", by a " .. file.source) or ""
  return ("%s %s (%s%s)"):format(file.action or "changed", name, counts, by)
end

-- hunks ------------------------------------------------------------------------

--- The hunks of a unified diff: {line = the first changed line in the new
--- text (the old one for a pure removal), text = that line}.
function M.hunks(diff)
  local found = {}
  local current
  for _, line in ipairs(vim.split(diff or "", "\n", { plain = true })) do
    local old_start, new_start = line:match("^@@ %-(%d+)[,%d]* %+(%d+)[,%d]* @@")
    if old_start then
      current = { old = tonumber(old_start), new = tonumber(new_start), seen = 0 }
    elseif current and current.hunk and line:sub(1, 1) == "-" then
      -- more removed lines: a replacement's new text may follow
    elseif current and current.hunk and line:sub(1, 1) == "+" then
      current.hunk.text = line -- replaced lines: show the first new one
      current.hunk = nil
    elseif current and not current.done then
      local mark = line:sub(1, 1)
      if mark == " " then
        current.seen = current.seen + 1
      elseif mark == "+" or mark == "-" then
        -- the first changed line; in the new text a removal sits where it was
        local hunk = { line = math.max(1, current.new + current.seen), text = line }
        table.insert(found, hunk)
        current.hunk = mark == "-" and hunk or nil
        current.done = true
      end
    elseif current then
      current.hunk = nil
    end
  end
  return found
end

--- The first changed line of a file's diff (1 when there is none).
function M.first_changed_line(file)
  local hunks = M.hunks(file.diff)
  return hunks[1] and hunks[1].line or 1
end

local function absolute(inst, path)
  return vim.fs.joinpath(inst.root, path)
end

--- Quickfix items: one per hunk of each file, at its first changed line.
function M.hunk_items(inst, files, label)
  local items = {}
  for _, file in ipairs(files) do
    local hunks = M.hunks(file.diff)
    if #hunks == 0 then
      table.insert(items, { filename = absolute(inst, file.path), lnum = 1, text = label .. M.describe(file) })
    end
    for _, hunk in ipairs(hunks) do
      table.insert(items, {
        filename = absolute(inst, file.path),
        lnum = hunk.line,
        text = ("%s%s %s"):format(label, file.action, hunk.text),
      })
    end
  end
  return items
end

-- diff tabs ----------------------------------------------------------------------

local function lines_of(text)
  local lines = vim.split(text or "", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

--- A read-only scratch buffer named `name` holding `text`.
local function scratch(name, text, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines_of(text))
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

M.tabs = {} -- the diff tabs opened, for tests: {tab, path, left, right}

--- Open a tab diffing `left` against `right` ({name, text}) for `path`.
function M.open_pair(path, left, right)
  local filetype = vim.filetype.match({ filename = path })
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local placeholder = vim.api.nvim_get_current_buf()
  local lbuf = scratch(left.name, left.text, filetype)
  local rbuf = scratch(right.name, right.text, filetype)
  vim.api.nvim_win_set_buf(0, lbuf)
  vim.cmd("diffthis")
  vim.cmd("rightbelow vsplit")
  vim.api.nvim_win_set_buf(0, rbuf)
  vim.cmd("diffthis")
  if vim.api.nvim_buf_is_valid(placeholder) and placeholder ~= lbuf then
    pcall(vim.api.nvim_buf_delete, placeholder, { force = true })
  end
  local entry = { tab = tab, path = path, left = lbuf, right = rbuf }
  table.insert(M.tabs, entry)
  return entry
end

--- Open the diff of one FileDiff in a tab of its own: before | after. A
--- file without whole texts (binary, or over 1 MiB) shows its unified diff.
function M.open_file(file, what)
  what = what or "turn"
  if file.binary then
    notify(("%s is binary: no text to compare (%s)"):format(file.path, M.describe(file)))
    return nil
  end
  local tag = ("agent-host://%s/%s"):format(what, file.path)
  if file.before == nil and file.after == nil then
    vim.cmd("tabnew")
    local buf = scratch(tag .. ".diff", file.diff, "diff")
    vim.api.nvim_win_set_buf(0, buf)
    return { tab = vim.api.nvim_get_current_tabpage(), path = file.path, left = buf }
  end
  return M.open_pair(
    file.path,
    { name = tag .. " (before)", text = file.before or "" },
    { name = tag .. " (after)", text = file.after or "" }
  )
end

-- :AgentDiff -----------------------------------------------------------------------

--- Show `files` as diff tabs (the first one current), or as quickfix hunks.
function M.show(inst, files, title, opts)
  if #files == 0 then
    notify(title .. ": no files changed")
    return
  end
  if opts and opts.quickfix then
    vim.fn.setqflist({}, " ", { title = "agent-host: " .. title, items = M.hunk_items(inst, files, "") })
    vim.cmd("copen")
    return
  end
  local first
  for _, file in ipairs(files) do
    local opened = M.open_file(file, title:gsub("%s+", "-"))
    first = first or opened
  end
  if first then
    vim.api.nvim_set_current_tabpage(first.tab)
  end
end

--- :AgentDiff [turn [N] | checkpoint N][!]: what the last turn (or turn N)
--- changed, or everything since checkpoint N; N is a checkpoint's number as
--- :AgentCheckpoints shows it. opts.quickfix: hunks in the quickfix list.
function M.diff(scope, number, opts, on_done)
  local inst = util.current()
  if not util.require_session(inst) then
    return
  end
  scope = scope or "turn"
  local function run(params, title)
    M.changes(inst, params, function(files, err)
      if not files then
        return fail("session/changes")(err)
      end
      M.show(inst, files, title, opts)
      if on_done then
        on_done(files)
      end
    end)
  end
  if scope == "turn" and number == nil then
    return run({}, "last turn")
  end
  if number == nil then
    return notify("usage: :AgentDiff[!] [turn [N] | checkpoint N]", vim.log.levels.ERROR)
  end
  require("agent_host.checkpoints").find(inst, number, function(c)
    local label = require("agent_host.checkpoints").number(c)
    if scope == "turn" then
      run({ seq = c.seq }, "turn " .. label)
    else
      run({ fromSeq = c.seq }, "since checkpoint " .. label)
    end
  end)
end

-- the chat ---------------------------------------------------------------------------

M.LIST_HEADER = "Changed files (<CR> on one opens its diff, U undoes its change):"

--- After a turn: list the files it changed in the chat; <CR> on a file's
--- line opens its diff, U undoes the turn's change to it (:AgentUndoFile).
--- then_() once listed (or there is nothing to list).
function M.list_turn(inst, seq, then_)
  then_ = then_ or function() end
  M.changes(inst, { seq = seq }, function(files)
    if not files or #files == 0 then
      return then_()
    end
    chat.append_lines(inst, { M.LIST_HEADER }, "AgentHostNote")
    for _, file in ipairs(files) do
      local row = chat.append_lines(inst, { "  ~ " .. M.describe(file) }, "AgentHostTool")
      chat.set_action(inst, row, {
        ["<CR>"] = function()
          M.open_file(file)
        end,
        U = function()
          util.api().undo_file(file.path, { seq = seq })
        end,
      })
    end
    then_()
  end)
end

return M
