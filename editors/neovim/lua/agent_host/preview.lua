-- The restore preview (:AgentRestore): before anything is written, a float
-- lists what the restore would do to each file (session/restore with dryRun)
-- and how many messages it removes; the user ticks the files to restore,
-- sees a file's diff or, for a conflict, the change of theirs the restore
-- would discard, then confirms (the restore gets the ticked files as
-- `paths`) or cancels.
local diffs = require("agent_host.diffs")
local client = require("agent_host.client")
local util = require("agent_host.util")

local notify, fail = util.notify, util.fail

local M = {}

M.KEYS = "<Space> tick · d diff · u your change · <CR> restore · q cancel"

M.showing = nil -- the open preview {buf, win, files, ticked, rows}, for tests

--- A file's line: "[x] modified a.py (+1 −1)", with a conflict named.
local function file_line(file, ticked)
  local line = ("[%s] %s"):format(ticked and "x" or " ", diffs.describe(file))
  if file.conflict then
    line = line .. "  ! changed since the agent wrote it: restoring it discards your change (u shows it)"
  end
  return line
end

local function render(view)
  local lines = { view.title }
  table.insert(lines, view.removed)
  table.insert(lines, "")
  view.rows = {}
  if #view.files == 0 then
    table.insert(lines, "(no files to restore)")
  end
  for i, file in ipairs(view.files) do
    table.insert(lines, file_line(file, view.ticked[i]))
    view.rows[#lines] = i
  end
  table.insert(lines, "")
  table.insert(lines, M.KEYS)
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  return lines
end

local function size(lines)
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  return math.min(width + 2, math.max(20, vim.o.columns - 4)), math.min(#lines, math.max(3, vim.o.lines - 6))
end

--- The file under the cursor (index), if any.
local function current_file(view)
  return view.rows[vim.api.nvim_win_get_cursor(view.win)[1]]
end

local function close(view)
  if vim.api.nvim_win_is_valid(view.win) then
    vim.api.nvim_win_close(view.win, true)
  end
  if M.showing == view then
    M.showing = nil
  end
end

--- What to send: the ticked paths (nil when the choice is the default one:
--- every file but the conflicts, or with ! every file) and whether to force.
function M.choice(view)
  local paths, force, default = {}, false, true
  for i, file in ipairs(view.files) do
    if view.ticked[i] then
      table.insert(paths, file.path)
      force = force or file.conflict == true
    end
    if view.ticked[i] ~= (view.force or not file.conflict) then
      default = false
    end
  end
  if default then
    return nil, view.force
  end
  return paths, force
end

local function confirm(view)
  close(view)
  local paths, force = M.choice(view)
  local mode = view.mode
  if paths and #paths == 0 then
    if not util.api().restore_modes[mode].conversation then
      return notify("no file ticked: nothing restored")
    end
    mode = "conversation" -- the conversation goes back, no file is written
    paths = nil
  end
  local messages = util.api().restore_modes[mode].conversation and view.messages or nil
  util.api().restore(view.seq, mode, view.on_done, { force = force, paths = paths, label = view.label, messages = messages })
end

local function keymaps(view)
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = view.buf, nowait = true, desc = "agent-host preview: " .. desc })
  end
  local function toggle()
    local i = current_file(view)
    if i then
      view.ticked[i] = not view.ticked[i]
      render(view)
    end
  end
  map("<Space>", toggle, "tick or untick the file")
  map("x", toggle, "tick or untick the file")
  map("d", function()
    local i = current_file(view)
    if i then
      -- what the disk holds now | what the restore would write
      diffs.open_file(view.files[i], "restore")
    end
  end, "the file's diff")
  map("u", function()
    local i = current_file(view)
    local file = i and view.files[i]
    if not file or not file.conflict then
      return notify("not a conflict: the agent's text is on disk, the restore discards nothing of yours")
    end
    if type(file.agentText) == "string" and type(file.before) == "string" then
      diffs.open_pair(
        file.path,
        { name = ("agent-host://yours/%s (the agent's)"):format(file.path), text = file.agentText },
        { name = ("agent-host://yours/%s (yours, on disk)"):format(file.path), text = file.before }
      )
    else
      diffs.open_file({ path = file.path .. ".yours", diff = file.userDiff or "" }, "yours")
    end
  end, "your change a restore would discard")
  map("<CR>", function()
    confirm(view)
  end, "restore the ticked files")
  for _, lhs in ipairs({ "q", "<Esc>" }) do
    map(lhs, function()
      close(view)
      notify("restore cancelled: nothing was written")
    end, "cancel")
  end
end

--- Show the preview of restoring checkpoint `seq` (mode as for restore) and
--- restore what the user confirms. opts.force: conflicts ticked too.
function M.preview(seq, mode, on_done, opts)
  opts = opts or {}
  local inst = util.current()
  if not util.require_session(inst) or not util.require_idle(inst, "restoring") then
    return
  end
  local name = mode or "both"
  local m = util.api().restore_modes[name]
  if not m then
    return notify("restore what? both, files or conversation", vim.log.levels.ERROR)
  end
  client.request(inst, "session/restore", {
    sessionId = inst.session_id,
    seq = seq,
    files = m.files,
    conversation = m.conversation,
    dryRun = true,
  }, function(err, result)
    if err then
      return fail("session/restore (preview)")(err)
    end
    local preview = result.preview or {}
    local files = m.files and (preview.files or {}) or {}
    local checkpoint = preview.checkpoint or { seq = seq }
    local label = opts.label or require("agent_host.checkpoints").number(checkpoint)
    local removed = m.conversation and (preview.messagesRemoved or 0) or 0
    local view = {
      seq = seq,
      mode = name,
      force = opts.force == true,
      on_done = on_done,
      label = label,
      messages = removed,
      files = files,
      ticked = {},
      title = ("Restore to just before %s%s (%s)"):format(
        label,
        checkpoint.prompt and (" · " .. checkpoint.prompt:gsub("%s+", " ")) or "",
        m.label
      ),
      removed = m.conversation and ("%d message%s removed"):format(removed, removed == 1 and "" or "s")
        or "the conversation stays as it is",
    }
    for i, file in ipairs(files) do
      view.ticked[i] = view.force or not file.conflict
    end
    view.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[view.buf].bufhidden = "wipe"
    vim.bo[view.buf].filetype = "agent-host-preview"
    local lines = render(view)
    local width, height = size(lines)
    view.win = vim.api.nvim_open_win(view.buf, true, {
      relative = "editor",
      row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
      col = math.max(0, math.floor((vim.o.columns - width) / 2)),
      width = width,
      height = height,
      style = "minimal",
      border = "rounded",
      title = " agent-host: restore preview ",
      title_pos = "center",
      zindex = 60,
    })
    vim.wo[view.win].cursorline = true
    local first = next(view.rows) and math.min(unpack(vim.tbl_keys(view.rows))) or 1
    vim.api.nvim_win_set_cursor(view.win, { first, 0 })
    keymaps(view)
    M.showing = view
  end)
end

return M
