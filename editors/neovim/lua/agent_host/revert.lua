-- :AgentUndoFile[!] [path]: undo what a turn did to one file (its text goes
-- back to what it was before that turn), leaving the turn's other files and
-- the conversation as they are (session/revertFiles). A file changed since
-- the agent wrote it is left as it is unless !; :AgentUndoRestore undoes it.
local checkpoints = require("agent_host.checkpoints")
local client = require("agent_host.client")
local util = require("agent_host.util")

local notify, fail = util.notify, util.fail

local M = {}

--- The workspace-relative path of `path` (default: the current buffer's file).
local function relative(inst, path)
  if path == nil or path == "" then
    path = vim.api.nvim_buf_get_name(0)
  end
  local full = vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
  local real = vim.uv.fs_realpath(full) or full
  local root = inst.root == "/" and "/" or (inst.root .. "/")
  if vim.startswith(real, root) then
    return real:sub(#root + 1)
  end
  return path -- already relative, or outside: the server says so
end

--- Undo turn `opts.turn` (a checkpoint's number; or opts.seq, its seq;
--- default the last turn)'s changes to `path`. opts.force: even if it
--- changed since the agent wrote it.
function M.undo_file(path, opts, on_done)
  opts = opts or {}
  local inst = util.current()
  if not util.require_session(inst) or not util.require_idle(inst, "undoing a file") then
    return
  end
  local rel = relative(inst, path)
  checkpoints.list(inst, function(list)
    local c = list[#list]
    if opts.turn or opts.seq then
      c = nil
      for _, each in ipairs(list) do
        if checkpoints.number(each) == opts.turn or each.seq == opts.seq then
          c = each
        end
      end
    end
    if not c then
      return notify((opts.turn or opts.seq) and "no such turn" or "the session has no turn yet", vim.log.levels.ERROR)
    end
    local label = checkpoints.number(c)
    client.request(inst, "session/revertFiles", {
      sessionId = inst.session_id,
      seq = c.seq,
      paths = { rel },
      force = opts.force or nil,
    }, function(err, result)
      if err then
        return fail("session/revertFiles")(err)
      end
      local verb = ("undid turn %s's changes to %s%s"):format(label, rel, opts.force and ", overwriting your change" or "")
      local hint = (":AgentUndoRestore, then :AgentUndoFile! %s"):format(rel)
      checkpoints.report(inst, checkpoints.restore_notes(verb, result, "the agent last wrote", hint))
      if on_done then
        on_done(result)
      end
    end)
  end)
end

return M
