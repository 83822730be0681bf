-- Agent edits of buffers with CRLF line endings, without a final newline,
-- with text beyond ASCII; a new file nobody has open; a deleted open file.
local H = dofile(vim.fs.dirname(arg[0]) .. "/helpers.lua")
local cfg = H.cfg

vim.fn.chdir(cfg.root)
local bufs = {}
for _, name in ipairs({ "dos.txt", "noeol.txt", "uni.txt", "gone.txt" }) do
  vim.cmd.edit(name)
  bufs[name] = vim.api.nvim_get_current_buf()
end
H.record("loaded", {
  dos_ff = vim.bo[bufs["dos.txt"]].fileformat,
  noeol_eol = vim.bo[bufs["noeol.txt"]].eol,
})

local agent = H.setup()
H.wait_ready()
local inst = H.instance()
vim.cmd("AgentSend edit them all")
H.wait_idle("the turn", 20000)
H.record("result", inst.last_result)

local after = {}
for name, buf in pairs(bufs) do
  after[name] = {
    lines = H.lines(buf),
    modified = vim.bo[buf].modified,
    disk = vim.uv.fs_stat(cfg.root .. "/" .. name) and H.read(cfg.root .. "/" .. name) or vim.NIL,
    eol = vim.bo[buf].eol,
    ff = vim.bo[buf].fileformat,
  }
end
H.record("after", after)
H.record("new_file_disk", H.read(cfg.root .. "/new.txt"))
H.record("new_file_buffer", vim.fn.bufexists(cfg.root .. "/new.txt") == 1)
H.record("edits_log", require("agent_host.edits").log)
H.record("messages", vim.fn.execute("messages"))
H.record("chat", H.chat_text())
H.done()
