-- An agent edit of a buffer with unsaved changes, a restore that brings them
-- back, a server restart, :AgentSessions[!], :AgentUndoRestore, :AgentHistory.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

vim.fn.chdir(cfg.root)
vim.cmd.edit("a.py")
local buf = vim.api.nvim_get_current_buf()
H.record("loaded", H.lines(buf))

-- an unsaved change the agent must see and a restore must bring back
vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "# unsaved note" })
local unsaved = H.lines(buf)
H.record("unsaved", unsaved)
H.record("modified_before", vim.bo[buf].modified)

local agent = H.setup()
H.wait_ready()
H.step("ready")
H.record("attached", #vim.lsp.get_clients({ bufnr = buf, name = "agent-host" }) == 1)
H.record("status_idle", agent.status())

-- the turn: edit_file a.py (approval auto), then a closing answer
local statuses = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "AgentHostStatus",
  callback = function()
    table.insert(statuses, agent.status())
  end,
})
vim.cmd("AgentSend make x two")
H.wait_idle("the turn to end")
local inst = H.instance()
H.step("sent")
H.record("send_result", inst.last_result)
H.record("session_id", inst.session_id)
H.record("after_send_lines", H.lines(buf))
H.record("after_send_modified", vim.bo[buf].modified)
H.record("after_send_disk", H.read(cfg.root .. "/a.py"))
H.record("statuses", statuses)
H.record("status_after", agent.status())
H.record("chat_after_send", H.chat_text())
H.record("chat_window", {
  shown = #vim.fn.win_findbuf(inst.chat_buf),
  filetype = vim.bo[inst.chat_buf].filetype,
  current_is_file = vim.api.nvim_get_current_buf() == buf,
  chat_modifiable = vim.bo[inst.chat_buf].modifiable,
})
H.record("edits_log", require("agent_host.edits").log)

-- a cost the server sent as null (it has no price for the model) shows as $—,
-- never as $0: in the footer, decoded as vim.lsp decodes the server's messages...
local unknown = vim.json.decode(
  '{"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":4},"cost":null,"totalCost":null}',
  { luanil = { object = true } }
)
require("agent_host.chat").footer(inst, unknown)
local chat_lines = vim.split(H.chat_text(), "\n", { plain = true })
H.record("footer_unknown_cost", chat_lines[#chat_lines])
-- ...and in the statusline (false: what a null totalCost leaves there)
local known_total = inst.total_cost
inst.total_cost = false
H.record("status_unknown_cost", agent.status())
inst.total_cost = known_total

-- the edit is one undo step, and :write does not ask "changed since reading"
vim.cmd("silent undo")
H.record("after_undo_lines", H.lines(buf))
H.record("after_undo_modified", vim.bo[buf].modified)
vim.cmd("silent redo")
H.record("after_redo_modified", vim.bo[buf].modified)
H.step("writing")
vim.cmd("silent write")
H.step("written")
H.record("after_write_disk", H.read(cfg.root .. "/a.py"))

-- :AgentCheckpoints, then :AgentRestore to the first checkpoint, both
local checkpoints
agent.checkpoints(function(list)
  checkpoints = list
end)
H.wait("the checkpoints", 10000, function()
  return checkpoints ~= nil
end)
H.record("checkpoints", checkpoints)
H.record("quickfix", vim.tbl_map(function(e)
  return { file = vim.fn.bufname(e.bufnr), lnum = e.lnum, text = e.text }
end, vim.fn.getqflist()))

local restored
H.answer(function()
  return true -- the first checkpoint
end)
H.answer_value("both")
local real_restore = agent.restore
agent.restore = function(seq, mode, on_done)
  return real_restore(seq, mode, function(result)
    restored = result
    if on_done then
      on_done(result)
    end
  end)
end
vim.cmd("AgentRestore")
H.in_preview("<CR>", "preview")
H.wait("the restore", 15000, function()
  return restored ~= nil
end)
agent.restore = real_restore
H.step("restored")
H.record("restore_result", restored)
H.record("after_restore_lines", H.lines(buf))
H.record("after_restore_modified", vim.bo[buf].modified)
H.record("after_restore_disk", H.read(cfg.root .. "/a.py"))

-- undo steps back through the restore: the file's text, then the agent's edit
vim.cmd("silent undo")
H.record("restore_undo1", { lines = H.lines(buf), modified = vim.bo[buf].modified })
vim.cmd("silent undo")
H.record("restore_undo2", { lines = H.lines(buf), modified = vim.bo[buf].modified })
vim.cmd("silent redo")
vim.cmd("silent redo")
H.record("restore_redo", { lines = H.lines(buf), modified = vim.bo[buf].modified })
-- Neovim knows the file changed: no W11/W12 on a check, no question on :write
vim.cmd("messages clear")
H.step("checktime")
vim.cmd("checktime " .. buf)
H.step("checked")
H.record("checktime_messages", vim.fn.execute("messages"))
vim.cmd("silent write")
H.step("written after restore")
H.record("after_restore_write_disk", H.read(cfg.root .. "/a.py"))
H.record("after_restore_write_modified", vim.bo[buf].modified)

-- restart the server: the session is still there
H.stop()
H.step("stopped")
H.record("status_stopped", agent.status())
local session_id = inst.session_id
inst.session_id = nil -- as in a fresh Neovim

-- :AgentSessions lists this root's sessions, :AgentSessions! every workspace's
-- (the store also has a session started elsewhere, written by the test)
local function look(command)
  local asked = #H.questions
  table.insert(H.answers, function()
    return nil -- just looking: dismissed
  end)
  vim.cmd(command)
  H.wait(command .. "'s list", 20000, function()
    return #H.questions > asked
  end)
  return H.questions[#H.questions]
end
H.record("sessions_here", look("AgentSessions"))
H.record("sessions_all", look("AgentSessions!"))
H.step("listed")
local resumed
H.answer(function(item)
  return item.sessionId == session_id
end)
agent.sessions(function(result)
  resumed = result
end)
H.wait("the resume", 20000, function()
  return resumed ~= nil
end)
H.step("resumed")
H.record("sessions_question", H.questions[#H.questions])
H.record("resumed", resumed)
H.record("history_chat", H.chat_text())
H.record("reattached", #vim.lsp.get_clients({ bufnr = buf, name = "agent-host" }) == 1)

-- undo the restore in the new server: the agent's text is back, saved
local undone
agent.undo_restore(function(result)
  undone = result
end)
H.wait("the undo", 15000, function()
  return undone ~= nil
end)
H.record("undo_result", undone)
H.record("after_undo_restore_lines", H.lines(buf))
H.record("after_undo_restore_modified", vim.bo[buf].modified)
H.record("after_undo_restore_disk", H.read(cfg.root .. "/a.py"))

H.done()
