-- A file the user changed after the agent's turn: :AgentRestore leaves it and
-- says so (with how to overwrite it), :AgentUndoRestore then :AgentRestore!
-- overwrite it, and an undo leaves a file changed since the restore wrote it.
-- Also the checkpoint label and restore notes of command-changed paths.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

local function disk(name)
  return H.read(cfg.root .. "/" .. name)
end

local notified = {}
local real_notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(notified, { msg = msg, level = level or vim.log.levels.INFO })
  return real_notify(msg, level, opts)
end

vim.fn.chdir(cfg.root)
vim.cmd.edit("a.py")
local buf = vim.api.nvim_get_current_buf()
local agent = H.setup()
H.wait_ready()
local inst = H.instance()

vim.cmd("AgentSend make both two")
H.wait_idle("the turn to end")
local seq = inst.last_result.checkpoint
H.record("seq", seq)
H.record("after_send", { a = disk("a.py"), b = disk("b.py"), lines = H.lines(buf) })

-- the user's own edit, after the agent's turn, saved
vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "x = 3  # mine" })
vim.cmd("silent write")
H.step("edited")

-- the commands end in agent.restore / agent.undo_restore: catch their results
local results = {}
local real_restore, real_undo = agent.restore, agent.undo_restore
agent.restore = function(s, mode, on_done, opts)
  return real_restore(s, mode, function(result)
    table.insert(results, result)
    if on_done then
      on_done(result)
    end
  end, opts)
end
agent.undo_restore = function(on_done)
  return real_undo(function(result)
    table.insert(results, result)
    if on_done then
      on_done(result)
    end
  end)
end
local function run(command, what)
  local count = #results
  local notes = #notified
  vim.cmd(command)
  if command:match("^AgentRestore") then
    H.in_preview("<CR>")
  end
  H.wait(what, 15000, function()
    return #results > count
  end)
  return {
    result = results[#results],
    a = disk("a.py"),
    b = disk("b.py"),
    lines = H.lines(buf),
    modified = vim.bo[buf].modified,
    chat = H.chat_text(),
    notified = vim.list_slice(notified, notes + 1),
  }
end

H.record("restored", run("AgentRestore 1 both", "the restore"))
H.record("undone", run("AgentUndoRestore", "the undo"))
H.record("forced", run("AgentRestore! 1 both", "the forced restore"))
-- b.py changed after the forced restore wrote it: the undo leaves it
H.write(cfg.root .. "/b.py", "y = 5  # mine\n")
H.record("undone_again", run("AgentUndoRestore", "the second undo"))

-- what the server reports of shell commands (shown without one here)
local checkpoints = require("agent_host.checkpoints")
H.record("label", checkpoints.checkpoint_label({
  seq = 4,
  ordinal = 2,
  prompt = "run the generator",
  createdAt = "2026-01-01T10:00:00Z",
  files = { "a.py", "gen.txt" },
  fromCommands = { "gen.txt" },
  notCaptured = { "node_modules/x.js" },
}))
H.record("label_unconfined", checkpoints.checkpoint_label({
  seq = 6,
  ordinal = 3,
  prompt = "install it",
  createdAt = "2026-01-01T10:00:00Z",
  files = { "gen.txt" },
  fromCommands = { "gen.txt" },
  externalTools = { "mcp__fs__write_file" },
  unconfined = { "make install" },
}))
H.record("label_confined_mcp", checkpoints.checkpoint_label({
  seq = 8,
  ordinal = 4,
  prompt = "write with mcp",
  createdAt = "2026-01-01T10:00:00Z",
  files = {},
  externalTools = { "mcp__fs__write_file" },
  unconfined = {},
}))
H.record("unconfined_notes", checkpoints.restore_notes("restored to just before 3", {
  restoredFiles = { "gen.txt" },
  removedEvents = 4,
  conflicts = {},
  notCaptured = {},
  unconfined = { "make install" },
}, "the agent last wrote", "unused"))
H.record("not_captured_notes", checkpoints.restore_notes("restored to just before 2 (files only)", {
  restoredFiles = { "gen.txt" },
  removedEvents = 0,
  unrevertedBuffers = {},
  conflicts = {},
  notCaptured = { "node_modules/x.js", "big.bin" },
}, "the agent last wrote", "unused"))
H.done()
