-- Options of require("agent_host").setup(); see :help agent-host-setup.
local M = {}

M.defaults = {
  -- The server command; its stdin/stdout carry the protocol.
  cmd = { "agent-host", "serve" },
  -- Extra environment for the server (API keys are better kept in your shell).
  cmd_env = nil,
  -- initializationOptions; nil leaves the server's default.
  model = nil, -- "openai/gpt-4.1-mini", "anthropic/...", "scripted:/path/script.json"
  store = nil, -- "file:///dir", a directory, "sqlite:///x.db", "memory:"
  approval = nil, -- "ask" (server default) | "auto-edit" | "auto" | "read-only"
  sandbox = nil, -- "workspace-write" (server default) | "read-only" | "full"
  -- The workspace root: a path, or a function(bufnr) returning one. Default:
  -- the nearest folder with one of root_markers above the buffer's file, else
  -- the current directory.
  root_dir = nil,
  root_markers = { ".git", ".hg", ".jj" },
  -- Start the server for the current root when setup() runs (else on the
  -- first command).
  autostart = true,
  chat = {
    -- "right", "left", "bottom", "top" or "tab".
    position = "right",
    -- Columns/lines, or a fraction of the editor's width/height.
    size = 0.4,
    -- Open the chat window (without focusing it) when a prompt is sent.
    open_on_send = true,
  },
  -- Milliseconds Neovim waits before telling the server about buffer
  -- changes; 0 so the agent always reads what you see.
  debounce_text_changes = 0,
  -- :AgentCancel repeats session/cancel this often until the turn answers,
  -- and gives up on the answer (abandoning the request) after cancel_timeout.
  cancel_retry_ms = 1000,
  cancel_timeout_ms = 10000,
  -- When Neovim quits during a turn, how long it waits for the turn to be
  -- cancelled and closed in the session's log.
  exit_wait_ms = 3000,
}

M.options = vim.deepcopy(M.defaults)

local function is_list(t)
  if vim.islist then
    return vim.islist(t)
  end
  return vim.tbl_islist(t)
end

-- Like vim.tbl_deep_extend("force"), but lists (cmd, root_markers) are
-- replaced whole on every Neovim version.
local function merge(base, over)
  local out = vim.deepcopy(base)
  for key, value in pairs(over or {}) do
    if type(value) == "table" and not is_list(value) and type(out[key]) == "table" and not is_list(out[key]) then
      out[key] = merge(out[key], value)
    else
      out[key] = vim.deepcopy(value)
    end
  end
  return out
end

local approvals = { ask = true, ["auto-edit"] = true, auto = true, ["read-only"] = true }
local sandboxes = { ["workspace-write"] = true, ["read-only"] = true, full = true }

function M.set(opts)
  opts = opts or {}
  local function check(name, ok, expected)
    if not ok then
      error(("agent_host.setup: %s must be %s, got %s"):format(name, expected, vim.inspect(opts[name])), 3)
    end
  end
  check("cmd", opts.cmd == nil or type(opts.cmd) == "table" or type(opts.cmd) == "function", "a list or a function")
  check("model", opts.model == nil or type(opts.model) == "string", "a string")
  check("store", opts.store == nil or type(opts.store) == "string", "a string")
  check("approval", opts.approval == nil or approvals[opts.approval] ~= nil, "ask, auto-edit, auto or read-only")
  check("sandbox", opts.sandbox == nil or sandboxes[opts.sandbox] ~= nil, "workspace-write, read-only or full")
  check("root_dir", opts.root_dir == nil or type(opts.root_dir) == "string" or type(opts.root_dir) == "function", "a string or a function")
  check("chat", opts.chat == nil or type(opts.chat) == "table", "a table")
  M.options = merge(M.defaults, opts)
  return M.options
end

return M
