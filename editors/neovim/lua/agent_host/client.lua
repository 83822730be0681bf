-- The agent-host language client: one per workspace root.
--
-- An "instance" is what the plugin knows about one root: its client, the
-- current session, the running turn, the chat buffer. Instances outlive their
-- clients, so a restarted server continues the same session.
--
-- This module keeps the instances and starts, attaches and stops their
-- clients; requests go through agent_host.rpc (re-exported here), and what
-- the servers send is handled in agent_host.events.
local compat = require("agent_host.compat")
local config = require("agent_host.config")
local rpc = require("agent_host.rpc")

local M = {}

M.NAME = "agent-host"

---@class agent_host.Instance
---@field root string
---@field client_id integer?
---@field ready boolean initialize answered
---@field pending function[] run once ready
---@field session_id string?
---@field turn table? the running session/send
---@field busy table? another running request: {what, request_id}
---@field activity string? what the turn is doing, for the statusline
---@field total_cost number|false|nil USD of the session; false: unknown; nil: no turn yet
---@field chat_buf integer?
---@field server_info table?

---@type table<string, agent_host.Instance>
M.instances = {}
M.last_root = nil ---@type string?

-- requests (agent_host.rpc) -------------------------------------------------

--- The instance's running LSP client, or nil.
M.client = rpc.client
--- Run fn(client) once the server is initialized; fn(nil, why) if it can't be.
M.with_client = rpc.with_client
--- Send a request once ready; handler(err, result). Returns a handle {request_id?}.
M.request = rpc.request
--- Send a notification if the server is ready; false if it is not.
M.notify = rpc.notify

-- instances -----------------------------------------------------------------

local function normalize(path)
  path = vim.fs.normalize(path)
  local real = vim.uv.fs_realpath(path)
  return real or path
end

--- The workspace root for a buffer.
function M.root_for(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local chat_root = vim.b[bufnr].agent_host_root
  if chat_root then
    return chat_root
  end
  local opt = config.options.root_dir
  local root
  if type(opt) == "function" then
    root = opt(bufnr)
  elseif type(opt) == "string" then
    root = opt
  end
  if not root and vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= "" then
    root = vim.fs.root(bufnr, config.options.root_markers or {})
  end
  return normalize(root or vim.fn.getcwd())
end

local function instance(root)
  local inst = M.instances[root]
  if not inst then
    inst = { root = root, ready = false, pending = {} }
    M.instances[root] = inst
  end
  return inst
end

function M.by_client(client_id)
  for _, inst in pairs(M.instances) do
    if inst.client_id == client_id then
      return inst
    end
  end
  return nil
end

--- Tell statuslines something changed.
function M.changed()
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "AgentHostStatus", modeline = false })
  pcall(vim.cmd, "redrawstatus!")
end

--- Cleanup when a turn is over (answered, abandoned, or the server died).
function M.finish_turn(inst, turn)
  if inst.turn ~= turn then
    return
  end
  if turn.timer then
    turn.timer:stop()
    turn.timer:close()
    turn.timer = nil
  end
  inst.turn = nil
  inst.activity = nil
  M.changed()
end

--- Handle a session/event notification for `inst` (see agent_host.events).
function M.on_event(inst, params)
  return require("agent_host.events").on_event(inst, params)
end

-- buffers -------------------------------------------------------------------

local function under(path, root)
  return path == root or vim.startswith(path, root == "/" and root or root .. "/")
end

--- Whether a buffer is a file the server should see (text sync).
local function syncable(bufnr, root)
  if not vim.api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= "" then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:match("^%a[%w+.-]*://") then
    return false
  end
  return under(normalize(name), root)
end

--- Attach a buffer to the client of the root it is under (if running).
function M.attach(bufnr)
  for root, inst in pairs(M.instances) do
    if inst.client_id and syncable(bufnr, root) then
      local client = M.client(inst)
      if client and not vim.lsp.buf_is_attached(bufnr, client.id) then
        vim.lsp.buf_attach_client(bufnr, client.id)
      end
    end
  end
end

local function attach_all(inst)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if syncable(bufnr, inst.root) then
      vim.lsp.buf_attach_client(bufnr, inst.client_id)
    end
  end
end

-- starting and stopping -----------------------------------------------------

local function make_config(inst)
  -- required here, not at the top: agent_host.events requires this module
  local events = require("agent_host.events")
  local opts = config.options
  local init_options = {}
  for _, key in ipairs({ "store", "model", "approval", "sandbox" }) do
    if opts[key] ~= nil then
      init_options[key] = opts[key]
    end
  end
  if type(init_options.store) == "string" and vim.startswith(init_options.store, "~") then
    init_options.store = vim.fs.normalize(init_options.store) -- a plain directory
  end
  local root = inst.root
  return {
    name = M.NAME,
    cmd = opts.cmd,
    cmd_cwd = root,
    cmd_env = opts.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    init_options = vim.tbl_isempty(init_options) and vim.empty_dict() or init_options,
    flags = { debounce_text_changes = opts.debounce_text_changes or 0 },
    handlers = events.handlers(),
    on_init = events.on_init,
    on_exit = events.on_exit,
  }
end

--- The instance for `root` with its client started (or already running).
function M.ensure(root)
  root = root or M.root_for(0)
  local inst = instance(root)
  M.last_root = root
  if M.client(inst) then
    return inst
  end
  local first_buf
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if syncable(bufnr, root) then
      first_buf = bufnr
      break
    end
  end
  inst.ready = false
  inst.stopping = false
  local ok, id = pcall(compat.start, make_config(inst), first_buf)
  if not ok or not id then
    vim.notify(
      ("agent-host: could not start %s: %s"):format(
        vim.inspect(config.options.cmd),
        ok and "vim.lsp.start returned nothing" or tostring(id)
      ),
      vim.log.levels.ERROR
    )
    return inst
  end
  inst.client_id = id
  attach_all(inst)
  M.changed()
  return inst
end

--- Stop the client(s): all roots, or one.
function M.stop(root, force)
  for key, inst in pairs(M.instances) do
    if root == nil or key == root then
      local client = M.client(inst)
      if client then
        inst.stopping = true
        compat.stop(client, force)
      end
    end
  end
end

return M
