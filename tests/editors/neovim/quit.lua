-- Quitting Neovim in the middle of a turn: Neovim stops the server on the way
-- out, and the server closes the turn in the session's log.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

vim.fn.chdir(cfg.root)
vim.cmd.edit("a.py")
H.setup()
H.wait_ready()
local inst = H.instance()
vim.cmd("AgentSend tell me a long story")
H.wait("the first words", 15000, function()
  return inst.turn and inst.turn.got_output
end)
H.record("session_id", inst.session_id)
H.obs.ok = true
H.flush()
vim.cmd("qall!")
