-- Neovim 0.10 / 0.11 differences in one place.
--
-- 0.11 made the LSP client's functions methods (client:request) and deprecated
-- the dot calls (client.request) that 0.10 has; vim.lsp.start grew `attach`;
-- vim.str_utfindex changed its signature.
local M = {}

M.has_011 = vim.fn.has("nvim-0.11") == 1

---@return boolean ok, integer? request_id
function M.request(client, method, params, handler, bufnr)
  if M.has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.notify(client, method, params)
  if M.has_011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

--- Sends $/cancelRequest. Neovim drops the callback of a cancelled request
--- (the server's -32800 answer never reaches it): clean up at cancel time.
function M.cancel_request(client, id)
  if M.has_011 then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

function M.stop(client, force)
  if M.has_011 then
    return client:stop(force)
  end
  return client.stop(force)
end

function M.is_stopped(client)
  if M.has_011 then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- Length of `s` in the units of a position encoding.
---@param s string
---@param encoding string "utf-8"|"utf-16"|"utf-32"
function M.units(s, encoding)
  if encoding == "utf-8" then
    return #s
  end
  if M.has_011 then
    return vim.str_utfindex(s, encoding)
  end
  local utf32, utf16 = vim.str_utfindex(s)
  return encoding == "utf-16" and utf16 or utf32
end

--- `s` cut to at most `max` characters (not bytes), "..." marking a cut.
function M.truncate(s, max)
  if vim.fn.strchars(s) <= max then
    return s
  end
  return vim.fn.strcharpart(s, 0, max - 3) .. "..."
end

--- Start (or reuse) the client for `config` without attaching any buffer;
--- `bufnr`, if given, is a file buffer to attach at once (0.10 needs one to
--- go through vim.lsp.start).
---@return integer? client_id
function M.start(config, bufnr)
  -- A client that is shutting down must not be reused: a restart starts anew.
  local function reuse(client, conf)
    local root = client.root_dir or (client.config and client.config.root_dir)
    return client.name == conf.name and root == conf.root_dir and not M.is_stopped(client)
  end
  if M.has_011 then
    return vim.lsp.start(config, { attach = false, reuse_client = reuse })
  end
  if bufnr then
    return vim.lsp.start(config, { bufnr = bufnr, reuse_client = reuse })
  end
  -- 0.10's vim.lsp.start always attaches a buffer; with none to attach,
  -- start the client alone.
  return vim.lsp.start_client(config)
end

return M
