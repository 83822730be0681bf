-- Reading a turn back (issue 25): a tool's long output folded under its
-- summary and opened with <CR>, a rejected call named, the statusline naming
-- the tool that runs after an allow, the current session marked in
-- :AgentSessions, the cost still shown after a resume in a restarted server.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

vim.fn.chdir(cfg.root)
vim.cmd.edit("a.py")
local agent = H.setup({ approval = "ask" })
H.wait_ready()
local inst = H.instance()

local statuses = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "AgentHostStatus",
  callback = function()
    table.insert(statuses, agent.status())
  end,
})
H.answer_value("allow_once") -- printf: three lines of output
H.answer_value("reject_once") -- the second command
vim.cmd("AgentSend run two commands")
H.wait_idle("the turn")
H.record("statuses", statuses)
H.record("chat", H.chat_text())
H.record("ran_rejected", vim.uv.fs_stat(cfg.root .. "/b.txt") ~= nil)

-- the chat window folds the output of the first command under its summary
local win = require("agent_host.chat").window(inst)
local lines = H.lines(inst.chat_buf)
local summary
for i, line in ipairs(lines) do
  if vim.startswith(line, "  ✓ one") then
    summary = i
  end
end
if not summary then
  H.fail("no summary line of the command's output in the chat")
end
H.record("summary_line", lines[summary])
local function fold_state()
  return vim.api.nvim_win_call(win, function()
    return {
      closed_at = vim.fn.foldclosed(summary),
      closed_end = vim.fn.foldclosedend(summary),
      shown = vim.fn.foldtextresult(summary),
    }
  end)
end
H.record("fold_before", fold_state())
local fold_end = fold_state().closed_end
H.record("fold_lines", vim.list_slice(lines, summary + 1, fold_end))
-- the user goes to the chat, onto the summary line, and presses <CR>
vim.api.nvim_set_current_win(win)
vim.api.nvim_win_set_cursor(win, { summary, 0 })
vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
H.record("fold_after", fold_state())
vim.cmd("wincmd p")

-- :AgentSessions marks the current session
local asked = #H.questions
table.insert(H.answers, function()
  return nil
end)
vim.cmd("AgentSessions")
H.wait("the sessions list", 10000, function()
  return #H.questions > asked
end)
H.record("sessions_items", H.questions[#H.questions].items)
H.record("session_id", inst.session_id)
H.record("status_after_turn", agent.status())

-- a restarted server, as in a fresh Neovim: resuming the session shows its cost
H.stop()
local session_id = inst.session_id
inst.session_id = nil
inst.total_cost = nil
local resumed
agent.resume(session_id, function(result)
  resumed = result
end)
H.wait("the resume", 20000, function()
  return resumed ~= nil
end)
H.record("status_after_resume", agent.status())
H.done()
