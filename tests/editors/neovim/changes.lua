-- What each turn changed (issue 25): the changed files listed in the chat
-- (<CR> opens a diff tab), checkpoints numbered with their prompts and their
-- quickfix entries at the changed line, :AgentDiff (tabs, a turn, hunks since
-- a checkpoint in quickfix), :AgentUndoFile (one file of a turn), and the
-- restore preview float (a conflict's change of yours shown, files ticked
-- and unticked) followed by the restore it previewed.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

local function disk(name)
  local fd = io.open(cfg.root .. "/" .. name, "rb")
  if not fd then
    return vim.NIL
  end
  local data = fd:read("*a")
  fd:close()
  return data
end
local NAMES = { "a.py", "b.py", "new.txt" }
local function disks()
  local found = {}
  for _, name in ipairs(NAMES) do
    found[name] = disk(name)
  end
  return found
end

vim.fn.chdir(cfg.root)
vim.cmd.edit("c.py")
local agent = H.setup()
H.wait_ready()
local inst = H.instance()
local diffs = require("agent_host.diffs")

vim.cmd("AgentSend first: edit a")
H.wait_idle("the first turn")
vim.cmd("AgentSend second: touch three files")
H.wait_idle("the second turn")
H.wait("the changed files in the chat", 10000, function()
  return H.chat_text():find("~ added new.txt", 1, true) ~= nil
end)
H.record("chat", H.chat_text())
H.record("after_turns", disks())

-- <CR> on a changed file's line in the chat opens its diff in a tab
local function tab_state(entry)
  local function side(buf)
    local win = vim.fn.win_findbuf(buf)[1]
    return { lines = H.lines(buf), diff = win ~= nil and vim.wo[win].diff, name = vim.api.nvim_buf_get_name(buf) }
  end
  return { path = entry.path, left = side(entry.left), right = side(entry.right), tab = vim.api.nvim_get_current_tabpage() == entry.tab }
end
local chat_win = require("agent_host.chat").window(inst)
local a_row
for i, line in ipairs(H.lines(inst.chat_buf)) do
  if vim.startswith(line, "  ~ modified a.py") then
    a_row = i
  end
end
vim.api.nvim_set_current_win(chat_win)
vim.api.nvim_win_set_cursor(chat_win, { a_row, 0 })
local opened = #diffs.tabs
vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
H.wait("the diff tab from the chat", 10000, function()
  return #diffs.tabs > opened
end)
H.record("chat_diff", tab_state(diffs.tabs[#diffs.tabs]))
vim.cmd("1tabnext | tabonly")

-- :AgentCheckpoints: numbered with the prompt, quickfix at the changed line
local listed
agent.checkpoints(function(list)
  listed = list
end)
H.wait("the checkpoints", 10000, function()
  return listed ~= nil
end)
H.record("labels", vim.tbl_map(require("agent_host.checkpoints").checkpoint_label, listed))
local function quickfix()
  return vim.tbl_map(function(e)
    return { file = vim.fn.fnamemodify(vim.fn.bufname(e.bufnr), ":."), lnum = e.lnum, text = e.text }
  end, vim.fn.getqflist())
end
H.record("checkpoints_quickfix", quickfix())

-- :AgentDiff (the last turn: a tab per file), :AgentDiff turn 1
local function diff_command(command)
  local before = #diffs.tabs
  local done = false
  local real = diffs.show
  diffs.show = function(...)
    real(...)
    done = true
  end
  vim.cmd(command)
  H.wait(command, 10000, function()
    return done
  end)
  diffs.show = real
  local states = {}
  for i = before + 1, #diffs.tabs do
    table.insert(states, tab_state(diffs.tabs[i]))
  end
  return states
end
H.record("diff_last_turn", diff_command("AgentDiff"))
vim.cmd("1tabnext | tabonly")
H.record("diff_turn_1", diff_command("AgentDiff turn 1"))
vim.cmd("1tabnext | tabonly")
diff_command("AgentDiff! checkpoint 1")
H.record("diff_since_1_quickfix", quickfix())
vim.cmd("cclose")

-- U on b.py's line in the chat: b.py as before the second turn, its other
-- files kept; :AgentUndoRestore takes that back; :AgentUndoFile b.py again
local undone
local real_undo = agent.undo_file
agent.undo_file = function(path, opts)
  return real_undo(path, opts, function(result)
    undone = result
  end)
end
local function undo_file(what, fn)
  undone = nil
  fn()
  H.wait(what, 10000, function()
    return undone ~= nil
  end)
  return undone
end
local b_row
for i, line in ipairs(H.lines(inst.chat_buf)) do
  if vim.startswith(line, "  ~ modified b.py") then
    b_row = i
  end
end
H.record("undo_key_result", undo_file("U in the chat", function()
  vim.api.nvim_set_current_win(chat_win)
  vim.api.nvim_win_set_cursor(chat_win, { b_row, 0 })
  vim.api.nvim_feedkeys("U", "mx", false)
end))
H.record("after_undo_key", disks())
vim.cmd("wincmd p")
local undo_restored
agent.undo_restore(function(result)
  undo_restored = result
end)
H.wait("the undo of the one-file undo", 10000, function()
  return undo_restored ~= nil
end)
H.record("after_undo_restore", disks())
H.record("undo_file_result", undo_file("AgentUndoFile", function()
  vim.cmd("AgentUndoFile b.py")
end))
agent.undo_file = real_undo
H.record("after_undo_file", disks())

-- the user's own change to a.py, then :AgentRestore 2 files: the preview
H.write(cfg.root .. "/a.py", "x = 1\ny = 2\nz = 2\n# mine\n")
local restored
local real_restore = agent.restore
agent.restore = function(seq, mode, on_done, opts)
  H.record("restore_opts", opts)
  return real_restore(seq, mode, function(result)
    restored = result
  end, opts)
end
H.record("before_restore", disks())
vim.cmd("AgentRestore 2 files")
local preview = require("agent_host.preview")
H.wait("the restore preview", 15000, function()
  return preview.showing ~= nil
end)
local view = preview.showing
H.record("preview_lines", H.lines(view.buf))
H.record("preview_files", view.files)
H.record("preview_float", vim.api.nvim_win_get_config(view.win).relative ~= "")
H.record("preview_current", vim.api.nvim_get_current_win() == view.win)
H.record("disk_while_previewing", disks())
local function row_of(path)
  for row, i in pairs(view.rows) do
    if view.files[i].path == path then
      return row
    end
  end
  H.fail("no preview line for " .. path)
end
local function press(keys, row)
  vim.api.nvim_set_current_win(view.win)
  vim.api.nvim_win_set_cursor(view.win, { row, 0 })
  vim.api.nvim_feedkeys(vim.keycode(keys), "mx", false)
end
-- u on the conflict: the agent's text against the user's, in a diff tab
opened = #diffs.tabs
press("u", row_of("a.py"))
H.wait("the user's change", 5000, function()
  return #diffs.tabs > opened
end)
H.record("yours", tab_state(diffs.tabs[#diffs.tabs]))
vim.cmd("tabclose")
-- d on new.txt: what the disk holds against what the restore would write
opened = #diffs.tabs
press("d", row_of("new.txt"))
H.wait("the preview diff", 5000, function()
  return #diffs.tabs > opened
end)
H.record("preview_diff", tab_state(diffs.tabs[#diffs.tabs]))
vim.cmd("tabclose")
-- tick the conflict (overwrite it), untick new.txt, then restore
press("<Space>", row_of("a.py"))
press("<Space>", row_of("new.txt"))
H.record("preview_lines_chosen", H.lines(view.buf))
press("<CR>", row_of("a.py"))
H.wait("the restore", 15000, function()
  return restored ~= nil
end)
agent.restore = real_restore
H.record("restore_result", restored)
H.record("after_restore", disks())
H.record("chat_after_restore", H.chat_text())

-- q cancels: nothing written
vim.cmd("AgentRestore 1 files")
H.wait("the second preview", 15000, function()
  return preview.showing ~= nil
end)
H.record("second_preview_files", #preview.showing.files)
local before_cancel = disks()
vim.api.nvim_feedkeys("q", "mx", false)
H.record("preview_cancelled", preview.showing == nil)
vim.wait(300)
H.record("cancel_wrote_nothing", vim.deep_equal(before_cancel, disks()))
H.done()
