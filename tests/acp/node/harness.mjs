// A real `agent-host acp` process driven over stdio by the official TypeScript
// ACP client (@agentclientprotocol/sdk, its stable v1 API).
//
// AGENT_HOST_PYTHON names the interpreter that has agent_host installed (the
// pytest wrapper, tests/acp/test_node_client.py, passes its own sys.executable).

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

import * as acp from "@agentclientprotocol/sdk";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..", "..");

export const { methods, PROTOCOL_VERSION, RequestError } = acp;

/** The Python that runs the agent: AGENT_HOST_PYTHON, else the checkout's venv. */
export function python() {
  if (process.env.AGENT_HOST_PYTHON) return process.env.AGENT_HOST_PYTHON;
  const venv = path.join(REPO, ".venv", "bin", "python");
  return fs.existsSync(venv) ? venv : "python3";
}

/**
 * A scratch folder for one test: `project` (the session's cwd, with an a.py),
 * `store` (the agent's session store, shared by every agent of the test) and
 * `script` (the scripted model's steps). Call `remove()` when done.
 */
export function scratch() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-host-acp-node-")));
  const project = path.join(root, "project");
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, "a.py"), "original\n");
  return {
    root,
    project,
    store: path.join(root, "store"),
    script: path.join(root, "script.json"),
    file: (name) => path.join(project, name),
    read: (name) => fs.readFileSync(path.join(project, name), "utf8"),
    exists: (name) => fs.existsSync(path.join(project, name)),
    remove: () => fs.rmSync(root, { recursive: true, force: true }),
  };
}

/**
 * What the client saw: every message the agent sent (in wire order), the
 * session/update notifications and the permission requests. `answer` is the
 * optionId the next permission request is answered with, or a function of the
 * SDK's request context that returns the RequestPermissionResponse.
 */
export class Recorder {
  constructor() {
    this.wire = [];
    this.updates = [];
    this.permissions = [];
    this.answer = "allow_once";
    // fs/write_text_file requests (with `fs: true`): path, content, and the disk's
    // text just before the client wrote it; `refuseWrites` fails them instead.
    this.writes = [];
    this.refuseWrites = false;
    this.waiters = [];
  }

  /** The updates of one kind (agent_message_chunk, tool_call, ...). */
  of(kind, sessionId) {
    return this.updates
      .filter((n) => n.update.sessionUpdate === kind)
      .filter((n) => sessionId === undefined || n.sessionId === sessionId)
      .map((n) => n.update);
  }

  /** The agent's streamed text, joined. */
  text(sessionId) {
    return this.of("agent_message_chunk", sessionId)
      .filter((u) => u.content.type === "text")
      .map((u) => u.content.text)
      .join("");
  }

  clear() {
    this.updates.length = 0;
    this.permissions.length = 0;
    this.wire.length = 0;
  }

  /** Resolves once an update satisfies `predicate` (or rejects after `ms`). */
  waitFor(predicate, ms = 10_000) {
    const found = this.updates.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = { predicate, resolve };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`no such session/update within ${ms} ms`));
      }, ms);
      waiter.resolve = (n) => {
        clearTimeout(timer);
        resolve(n);
      };
      this.waiters.push(waiter);
    });
  }

  _update(notification) {
    this.updates.push(notification);
    for (const waiter of [...this.waiters]) {
      if (waiter.predicate(notification)) {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        waiter.resolve(notification);
      }
    }
  }
}

/**
 * Runs `op(ctx, recorder, initialized)` against a fresh agent process:
 * `ctx` is the SDK's ClientContext, already past `initialize` (whose answer is
 * `initialized`). `steps` (if given) replaces the scripted model's script;
 * `args` are extra command-line arguments (e.g. ["--approval", "auto"]).
 * With `fs: true` the client offers fs.readTextFile and fs.writeTextFile and
 * serves them from the disk, as an editor without open buffers would.
 * The agent's stderr is added to the message of an error `op` throws.
 */
export async function withAgent(dir, { steps, args = [], timeoutMs = 20_000, fs: offerFs = false } = {}, op) {
  if (steps !== undefined) fs.writeFileSync(dir.script, JSON.stringify({ steps }));
  const argv = [
    "-m", "agent_host", "acp",
    "--store", dir.store,
    "--model", `scripted:${dir.script}`,
    ...args,
  ];
  const child = spawn(python(), argv, {
    cwd: dir.project,
    env: { ...process.env, PYTHONUNBUFFERED: "1" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (error) => resolve({ error }));
  });

  const recorder = new Recorder();
  const base = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const log = wireLog(child.pid);
  const tap = new TransformStream({
    transform(message, controller) {
      recorder.wire.push(message);
      log("agent", message);
      controller.enqueue(message);
    },
  });
  const sent = new TransformStream({
    transform(message, controller) {
      log("client", message);
      controller.enqueue(message);
    },
  });
  sent.readable.pipeTo(base.writable).catch(() => {});
  const stream = { writable: sent.writable, readable: base.readable.pipeThrough(tap) };

  const app = acp
    .client({ name: "agent-host-node-tests" })
    .onNotification(methods.client.session.update, ({ params }) => {
      recorder._update(params);
    })
    .onRequest(methods.client.session.requestPermission, async (context) => {
      recorder.permissions.push(context.params);
      if (typeof recorder.answer === "function") return await recorder.answer(context);
      return { outcome: { outcome: "selected", optionId: recorder.answer } };
    })
    .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
      try {
        return { content: fs.readFileSync(params.path, "utf8") };
      } catch (error) {
        throw new RequestError(-32002, `Resource not found: ${params.path}`);
      }
    })
    .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
      const diskBefore = fs.existsSync(params.path) ? fs.readFileSync(params.path, "utf8") : null;
      recorder.writes.push({ path: params.path, content: params.content, diskBefore });
      if (recorder.refuseWrites) throw new RequestError(-32603, "the test client refuses this write");
      fs.writeFileSync(params.path, params.content);
      return {};
    });

  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`agent session over ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([
      deadline,
      app.connectWith(stream, async (ctx) => {
        const initialized = await ctx.request(methods.agent.initialize, {
          protocolVersion: PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: offerFs, writeTextFile: offerFs }, terminal: false },
          clientInfo: { name: "agent-host-node-tests", version: "0.0.0" },
        });
        return await op(ctx, recorder, initialized);
      }),
    ]);
  } catch (error) {
    if (error instanceof Error) {
      error.message += `\n--- agent stderr ---\n${stderr.slice(-4000)}`;
    }
    throw error;
  } finally {
    clearTimeout(timer);
    // connectWith closed the connection; the agent ends when its stdin does.
    child.stdin.end();
    let grace;
    const ended = await Promise.race([
      exited,
      new Promise((resolve) => {
        grace = setTimeout(() => resolve(null), 5_000);
      }),
    ]);
    clearTimeout(grace);
    if (ended === null) {
      child.kill("SIGKILL");
      await exited;
    }
  }
}

/**
 * With AGENT_HOST_WIRE_DIR set, every message both ways is appended to
 * DIR/node-<pid>.jsonl as tests/acp/wire_tap.py records them, for the pytest
 * wrapper to check the agent's against the ACP v1 schema (tests/acp/schema_check.py).
 */
function wireLog(pid) {
  const dir = process.env.AGENT_HOST_WIRE_DIR;
  if (!dir) return () => {};
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `node-${pid}.jsonl`);
  return (side, message) => {
    fs.appendFileSync(file, JSON.stringify({ from: side, line: JSON.stringify(message) }) + "\n");
  };
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** session/new in `dir.project`: the session id. */
export async function newSession(ctx, dir) {
  const created = await ctx.request(methods.agent.session.new, { cwd: dir.project, mcpServers: [] });
  return created.sessionId;
}

/** session/prompt with one text block. */
export function say(ctx, sessionId, text) {
  return ctx.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text }],
  });
}

/** The (code, message) of the JSON-RPC error `promise` rejects with. */
export async function rpcError(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a JSON-RPC error, got an answer");
}
