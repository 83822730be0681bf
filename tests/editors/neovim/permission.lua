-- approval "ask": session/requestPermission through vim.ui.select with the
-- diff shown; a selection sent as context; a prompt from vim.ui.input;
-- :AgentCompact, :AgentHistory, :AgentNew.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

vim.fn.chdir(cfg.root)
vim.cmd.edit("a.py")
local buf = vim.api.nvim_get_current_buf()
local agent = H.setup({ approval = "ask" })
H.wait_ready()
local inst = H.instance()
local permission = require("agent_host.permission")

local asked = {}
local function answer_permission(outcome)
  table.insert(H.answers, function(items, opts)
    local float_lines, float_ft, float_open = vim.NIL, vim.NIL, false
    if permission.showing and vim.api.nvim_buf_is_valid(permission.showing) then
      float_lines = H.lines(permission.showing)
      float_ft = vim.bo[permission.showing].filetype
      for _, win in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_win_get_buf(win) == permission.showing and vim.api.nvim_win_get_config(win).relative ~= "" then
          float_open = true
        end
      end
    end
    table.insert(asked, {
      kind = opts.kind,
      prompt = opts.prompt,
      items = items,
      float_lines = float_lines,
      float_filetype = float_ft,
      float_open = float_open,
      status = agent.status(),
    })
    return outcome
  end)
end
answer_permission("allow_once") -- the edit
answer_permission("reject_once") -- the command

-- line 1 as context, with :AgentSend over a range
vim.cmd("1,1AgentSend make x three")
H.wait_idle("the turn with two permission questions", 20000)
H.record("asked", asked)
H.record("float_closed", permission.showing == nil)
H.record("send_result", inst.last_result)
H.record("disk", H.read(cfg.root .. "/a.py"))
H.record("buffer", H.lines(buf))
H.record("modified", vim.bo[buf].modified)
H.record("ran", vim.uv.fs_stat(cfg.root .. "/ran.txt") ~= nil)
H.record("chat_turn1", H.chat_text())

-- a prompt typed into vim.ui.input
table.insert(H.answers, function()
  return "and now?"
end)
vim.cmd("AgentSend")
H.wait_idle("the second turn")
H.record("second_result", inst.last_result)

-- :AgentCompact
local compacted
agent.compact("keep file names", function(result)
  compacted = result
end)
H.wait("the compaction", 15000, function()
  return compacted ~= nil
end)
H.record("compact", compacted)
H.record("chat_after_compact", H.chat_text())

-- :AgentHistory
local history
agent.history(function(result)
  history = result
end)
H.wait("the history", 10000, function()
  return history ~= nil
end)
H.record("history", history.messages)
H.record("history_chat", H.chat_text())

-- :AgentNew
local old = inst.session_id
vim.cmd("AgentNew a fresh start")
H.wait("the new session", 10000, function()
  return inst.session_id ~= old
end)
H.record("new_session", { old = old, new = inst.session_id })
H.record("chat_after_new", H.chat_text())
-- Issue 23: a session is stored, and listed, from its first prompt. Before it,
-- :AgentSessions shows the current one on top (not from session/list).
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
local unlisted
require("agent_host.client").request(inst, "session/list", vim.empty_dict(), function(_, result)
  unlisted = result
end)
H.wait("the list before the prompt", 10000, function()
  return unlisted ~= nil
end)
H.record("sessions_before_prompt", unlisted.sessions)
H.record("picker_before_prompt", look("AgentSessions"))
vim.cmd("AgentSend hello again")
H.wait_idle("the new session's first turn")
H.record("picker_after_prompt", look("AgentSessions"))
local list
require("agent_host.client").request(inst, "session/list", vim.empty_dict(), function(_, result)
  list = result
end)
H.wait("the list", 10000, function()
  return list ~= nil
end)
H.record("sessions", list.sessions)

-- :AgentNew then :AgentClose before any prompt: nothing of it was stored
local kept = inst.session_id
vim.cmd("AgentNew never prompted")
H.wait("the unprompted session", 10000, function()
  return inst.session_id ~= kept
end)
vim.cmd("AgentClose")
H.wait("the unprompted session to be closed", 10000, function()
  return inst.session_id == nil
end)
H.record("closed_unprompted_chat", H.chat_text())
H.done()
