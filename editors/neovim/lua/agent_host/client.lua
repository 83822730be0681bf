-- The agent-host language client: one per workspace root.
--
-- An "instance" is what the plugin knows about one root: its client, the
-- current session, the running turn, the chat buffer. Instances outlive their
-- clients, so a restarted server continues the same session.
local chat = require("agent_host.chat")
local compat = require("agent_host.compat")
local config = require("agent_host.config")
local edits = require("agent_host.edits")
local permission = require("agent_host.permission")

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
---@field total_cost number?
---@field chat_buf integer?
---@field server_info table?

---@type table<string, agent_host.Instance>
M.instances = {}
M.last_root = nil ---@type string?

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

function M.client(inst)
  if not inst or not inst.client_id then
    return nil
  end
  local client = vim.lsp.get_client_by_id(inst.client_id)
  if not client or compat.is_stopped(client) then
    return nil
  end
  return client
end

--- Tell statuslines something changed.
function M.changed()
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "AgentHostStatus", modeline = false })
  pcall(vim.cmd, "redrawstatus!")
end

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

local function drop_pending(inst, why)
  local pending = inst.pending
  inst.pending = {}
  for _, fn in ipairs(pending) do
    pcall(fn, nil, why)
  end
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

local function on_exit(inst, client_id, code, signal)
  if inst.client_id ~= client_id then
    return
  end
  inst.client_id = nil
  inst.ready = false
  drop_pending(inst, "the agent-host server exited")
  local turn = inst.turn
  if turn then
    chat.note(inst, ("— the server exited (code %s) during the turn"):format(tostring(code)), "AgentHostError")
    M.finish_turn(inst, turn)
    if turn.done then
      turn.done({ code = -32603, message = "the agent-host server exited during the turn" }, nil)
    end
  end
  inst.busy = nil
  inst.activity = nil
  if code ~= 0 and not inst.stopping then
    vim.notify(
      ("agent-host: the server exited with code %s%s; see the LSP log (:checkhealth agent_host names it)"):format(
        tostring(code),
        signal and signal ~= 0 and (" (signal " .. signal .. ")") or ""
      ),
      vim.log.levels.ERROR
    )
  end
  inst.stopping = false
  M.changed()
end

-- session/event ---------------------------------------------------------

function M.on_event(inst, params)
  local session = params.sessionId
  local turn = inst.turn
  local mine = session ~= nil and (session == inst.session_id or (turn and session == turn.session_id))
  if not mine then
    return
  end
  local kind, data = params.kind, params.data or {}
  if kind == "text_delta" then
    if turn then
      turn.streamed = true
      turn.got_output = true
    end
    chat.append_text(inst, data.text)
    if inst.activity ~= "writing" then
      inst.activity = "writing"
      M.changed()
    end
  elseif kind == "assistant_message" then
    -- the text was streamed already, unless the provider does not stream
    if turn and not turn.streamed and type(data.text) == "string" and data.text ~= "" then
      chat.append_text(inst, data.text)
    end
    if turn then
      turn.streamed = false
    end
  elseif kind == "user_prompt" then
    if turn then
      turn.checkpoint = data.seq
    end
  elseif kind == "tool_call" then
    chat.tool_call(inst, data)
    inst.activity = "tool " .. tostring(data.name)
    M.changed()
  elseif kind == "tool_result" then
    chat.tool_result(inst, data)
    inst.activity = "thinking"
    M.changed()
  elseif kind == "usage" then
    if turn then
      turn.cost = (turn.cost or 0) + (tonumber(data.cost) or 0)
    end
  elseif kind == "turn_end" then
    if turn then
      turn.ended = data.stopReason
    end
  elseif kind == "compaction_progress" then
    chat.note(inst, ("… compaction %s%s"):format(data.stage or "", data.message and data.message ~= "" and (": " .. data.message) or ""))
  end
end

-- starting ----------------------------------------------------------------

local function make_config(inst)
  local opts = config.options
  local init_options = {}
  for _, key in ipairs({ "store", "model", "approval" }) do
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
    handlers = {
      ["session/event"] = function(_, params, ctx)
        local target = M.by_client(ctx.client_id)
        if target and params then
          M.on_event(target, params)
        end
      end,
      ["session/requestPermission"] = permission.handler_with(function(ctx, params)
        local target = M.by_client(ctx.client_id)
        if target then
          target.activity = "permission?"
          chat.append_lines(target, { "? " .. permission.describe(params.tool or "?", params.arguments) }, "AgentHostAsk")
          M.changed()
        end
      end, function(ctx, _, outcome)
        local target = M.by_client(ctx.client_id)
        if target then
          target.activity = outcome:match("^allow") and "tool" or "thinking"
          chat.append_lines(target, { "  → " .. (permission.labels[outcome] or outcome) }, "AgentHostAsk")
          M.changed()
        end
      end),
      ["workspace/applyEdit"] = edits.handler,
    },
    on_init = function(client, result)
      local target = M.by_client(client.id)
      if not target then
        return
      end
      target.ready = true
      local info = vim.tbl_get(result or {}, "capabilities", "experimental", "agentHost")
      target.server_info = info
      if info and info.protocolVersion ~= 1 then
        vim.notify(
          ("agent-host: the server speaks protocol %s; this plugin knows 1"):format(tostring(info.protocolVersion)),
          vim.log.levels.WARN
        )
      end
      local pending = target.pending
      target.pending = {}
      for _, fn in ipairs(pending) do
        local ok, err = pcall(fn, client)
        if not ok then
          vim.notify("agent-host: " .. tostring(err), vim.log.levels.ERROR)
        end
      end
      M.changed()
    end,
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        local target = M.by_client(client_id)
        if target then
          on_exit(target, client_id, code, signal)
        end
      end)
    end,
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

--- Run fn(client) once the server is initialized; fn(nil, why) if it can't be.
function M.with_client(inst, fn)
  local client = M.client(inst)
  if not client then
    fn(nil, "the agent-host server is not running (it could not start or has stopped)")
    return
  end
  if inst.ready then
    fn(client)
  else
    table.insert(inst.pending, fn)
  end
end

--- Send a request once ready; handler(err, result) (err: {code, message}).
---@return table handle {request_id?}: filled once the request is sent
function M.request(inst, method, params, handler)
  local handle = {}
  M.with_client(inst, function(client, why)
    if not client then
      handler({ code = -32603, message = why }, nil)
      return
    end
    local ok, request_id = compat.request(client, method, params, function(err, result)
      handler(err, result)
    end)
    if not ok then
      handler({ code = -32603, message = "could not send " .. method .. " (the server is gone?)" }, nil)
      return
    end
    handle.request_id = request_id
    handle.client_id = client.id
  end)
  return handle
end

function M.notify(inst, method, params)
  local client = M.client(inst)
  if client and inst.ready then
    return compat.notify(client, method, params)
  end
  return false
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
