-- workspace/applyEdit from agent-host: the agent's writes reaching open buffers.
--
-- The server writes a file to disk first, then sends every open buffer of it
-- one whole-document edit (see docs/protocol.md, workspace/applyEdit). Neovim's
-- default handler alone would leave each such buffer 'modified' although it
-- equals the file, and with the file's old timestamp, so Neovim would later
-- warn that the file changed (W11/W12) and the next :write would ask "The file
-- has been changed since reading it". This wraps the default handler. For a
-- whole-document edit of a file buffer:
--
-- 1. The buffer is first reloaded from the file the server just wrote (as
--    'autoread' would): it takes the file's text and timestamp and is not
--    modified. If that is the edit's text -- the agent's write -- done: one
--    undo step takes the edit back (your text before it, unsaved changes
--    included, returns as unsaved changes).
-- 2. Otherwise the edit's text is not the file's: a restore bringing back the
--    text you had not saved. Neovim's default handler then applies it over
--    the reloaded buffer, which stays modified (unsaved text over the file's
--    saved bytes), and :write writes it without a question.
--
-- Other edits (not whole-document, versioned, with file operations, or files
-- whose content can't be compared) go to the default handler as they are;
-- then each buffer they touched is compared with its file: equal -> marked
-- unmodified, different -> left modified, and the file change is acknowledged
-- so Neovim does not warn about it.
local compat = require("agent_host.compat")

local M = {}

M.log = {} -- the last edits handled, for :checkhealth and tests: {uri, how}
local LOG_MAX = 50

local function remember(uri, how)
  table.insert(M.log, { uri = uri, how = how })
  if #M.log > LOG_MAX then
    table.remove(M.log, 1)
  end
end

local function read_file(path)
  local fd = io.open(path, "rb")
  if not fd then
    return nil
  end
  local data = fd:read("*a")
  fd:close()
  return data
end

--- The lines Neovim shows for `text` read with 'fileformat' `ff` (its final
--- line break is not a line; a UTF-8 BOM is not text).
local function text_lines(text, ff)
  if text:sub(1, 3) == "\239\187\191" then
    text = text:sub(4)
  end
  if ff == "dos" then
    text = text:gsub("\r\n", "\n")
  elseif ff == "mac" then
    text = text:gsub("\r", "\n")
  end
  if text:sub(-1) == "\n" then
    text = text:sub(1, -2)
  end
  return vim.split(text, "\n", { plain = true })
end

--- The file buffer's content on disk as lines, or nil when it can't be
--- judged (no file, an encoding other than UTF-8, not a normal buffer).
local function disk_lines(bufnr)
  if vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  local fenc = vim.bo[bufnr].fileencoding
  if fenc ~= "" and fenc ~= "utf-8" then
    return nil
  end
  local path = vim.api.nvim_buf_get_name(bufnr)
  if path == "" then
    return nil
  end
  local data = read_file(path)
  if data == nil then
    return nil
  end
  return text_lines(data, vim.bo[bufnr].fileformat)
end

--- The lines a buffer has after a whole-document edit with `new_text`
--- (line endings normalised as vim.lsp.util.apply_text_edits does).
local function edit_lines(new_text)
  return text_lines((new_text:gsub("\r\n?", "\n")), "unix")
end

local function buffer_lines(bufnr)
  return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
end

local function same(a, b)
  if #a ~= #b then
    return false
  end
  for i = 1, #a do
    if a[i] ~= b[i] then
      return false
    end
  end
  return true
end

--- Whether the buffer's text equals its file on disk.
function M.equals_disk(bufnr)
  local disk = disk_lines(bufnr)
  return disk ~= nil and same(buffer_lines(bufnr), disk)
end

--- Run :checktime for one buffer, answering a FileChangedShell about it with
--- `choice` ("reload": read the file again; "": the change is known, do
--- nothing). With 'autoread' and no unsaved changes Neovim reloads on its own.
local function check_timestamp(bufnr, choice)
  local id = vim.api.nvim_create_autocmd("FileChangedShell", {
    buffer = bufnr,
    desc = "agent-host: a file the agent just wrote",
    callback = function()
      vim.v.fcs_choice = choice
    end,
  })
  local ok, err = pcall(vim.cmd, ("silent checktime %d"):format(bufnr))
  pcall(vim.api.nvim_del_autocmd, id)
  if not ok then
    remember(vim.uri_from_bufnr(bufnr), "checktime failed: " .. tostring(err))
  end
end

--- If `edits` replace the whole of the buffer, the new text; else nil.
local function whole_document_text(bufnr, edits, encoding)
  if #edits ~= 1 then
    return nil
  end
  local range = edits[1].range
  if range.start.line ~= 0 or range.start.character ~= 0 then
    return nil
  end
  local count = vim.api.nvim_buf_line_count(bufnr)
  local stop = range["end"]
  if stop.line >= count then
    return edits[1].newText
  end
  if stop.line == count - 1 then
    local last = vim.api.nvim_buf_get_lines(bufnr, count - 1, count, false)[1] or ""
    if stop.character >= compat.units(last, encoding) then
      return edits[1].newText
    end
  end
  return nil
end

--- The loaded file buffer of `uri`, if any (never creates one).
local function loaded_file_buffer(uri)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].buftype == "" and vim.uri_from_bufnr(bufnr) == uri then
      return bufnr
    end
  end
  return nil
end

--- Step 1 for a whole-document edit: reload the buffer from its file.
--- Returns "done" when the buffer now has the edit's text (unmodified),
--- "apply" when the text must still be applied over the reloaded buffer, nil
--- when the file can't be compared (the default handler does it all).
local function reload_first(bufnr, new_text)
  local disk = disk_lines(bufnr)
  if disk == nil then
    return nil
  end
  local want = edit_lines(new_text)
  -- The reload happens only if Neovim sees the file's timestamp move; the
  -- checks below hold either way.
  check_timestamp(bufnr, "reload")
  if same(disk, want) and same(buffer_lines(bufnr), want) and not vim.bo[bufnr].modified then
    return "done"
  end
  -- the text then comes as an undo step of its own after the reload's
  pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd("let &g:undolevels = &g:undolevels")
  end)
  return "apply"
end

--- A whole-document edit with `text` for the buffer as it is now.
local function whole_edit(bufnr, text)
  local count = vim.api.nvim_buf_line_count(bufnr)
  return {
    range = { start = { line = 0, character = 0 }, ["end"] = { line = count, character = 0 } },
    newText = text,
  }
end

--- After an edit through the default handler: unmodified if the buffer now
--- equals its file, else modified (your unsaved text, brought back by a
--- restore); the server's change to the file is acknowledged either way.
function M.settle(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= "" then
    return
  end
  if vim.api.nvim_buf_get_name(bufnr) == "" then
    return
  end
  if M.equals_disk(bufnr) then
    vim.bo[bufnr].modified = false
    check_timestamp(bufnr, "reload") -- same text: only the timestamp is taken
    remember(vim.uri_from_bufnr(bufnr), "applied; equals the file: unmodified")
  else
    check_timestamp(bufnr, "")
    vim.bo[bufnr].modified = true
    remember(vim.uri_from_bufnr(bufnr), "applied; differs from the file: modified")
  end
end

--- The workspace/applyEdit handler (registered in the client's `handlers`).
function M.handler(err, params, ctx, config)
  local default = vim.lsp.handlers["workspace/applyEdit"]
  if not params or not params.edit then
    return default(err, params, ctx, config)
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = client and client.offset_encoding or "utf-16"
  local edit = params.edit
  local rest = vim.deepcopy(edit)
  local touched = {} ---@type table<integer, boolean>

  -- Resource operations (create/rename/delete) must keep their order with
  -- the text edits: leave such an edit wholly to the default handler.
  local has_resource_ops = false
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind ~= nil then
      has_resource_ops = true
    end
  end

  if not has_resource_ops then
    for uri, edits in pairs(edit.changes or {}) do
      local bufnr = loaded_file_buffer(uri)
      if bufnr then
        local text = whole_document_text(bufnr, edits, encoding)
        local step = text and reload_first(bufnr, text)
        if step == "done" then
          rest.changes[uri] = nil
          remember(uri, "reloaded from the file")
        elseif step == "apply" then
          rest.changes[uri] = { whole_edit(bufnr, text) }
          touched[bufnr] = true
        else
          touched[bufnr] = true
        end
      end
    end
    if edit.documentChanges then
      rest.documentChanges = {}
      for _, change in ipairs(edit.documentChanges) do
        local doc = change.textDocument
        local bufnr = loaded_file_buffer(doc.uri)
        local done = false
        -- A versioned edit is checked against the buffer's version by the
        -- default handler: only unversioned ones take the reload path.
        if bufnr and (doc.version == nil or doc.version == vim.NIL) then
          local text = whole_document_text(bufnr, change.edits, encoding)
          local step = text and reload_first(bufnr, text)
          if step == "done" then
            done = true
            remember(doc.uri, "reloaded from the file")
          elseif step == "apply" then
            change = vim.deepcopy(change)
            change.edits = { whole_edit(bufnr, text) }
          end
        end
        if not done then
          table.insert(rest.documentChanges, change)
          if bufnr then
            touched[bufnr] = true
          end
        end
      end
    end
  end

  local has_rest = has_resource_ops
    or next(rest.changes or {}) ~= nil
    or (rest.documentChanges ~= nil and #rest.documentChanges > 0)
  if not has_rest then
    return { applied = true }
  end
  -- The label ("agent-host: write a.py") would be print()ed by the default
  -- handler during a turn; the chat buffer shows the tool calls instead.
  local forwarded = vim.deepcopy(params)
  forwarded.label = nil
  forwarded.edit = rest
  local result = default(err, forwarded, ctx, config)
  if result and result.applied then
    for bufnr in pairs(touched) do
      M.settle(bufnr)
    end
  end
  return result
end

return M
