// Sessions over ACP through the TypeScript SDK: session/load in a new agent
// process (the replay comes before the answer), session/list, bad session ids.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { methods, newSession, rpcError, say, scratch, withAgent } from "./harness.mjs";

const TWO_TURNS = [
  {
    text: "Writing a.py.",
    tool_calls: [{ name: "write_file", arguments: { path: "a.py", content: "x\n" } }],
  },
  { text: "Wrote it." },
  { text: "Second answer." },
];

test("session/load in a new agent process replays the conversation before answering", async () => {
  const dir = scratch();
  try {
    const sid = await withAgent(dir, { steps: TWO_TURNS, args: ["--approval", "auto"] }, async (ctx) => {
      const sid = await newSession(ctx, dir);
      assert.equal((await say(ctx, sid, "write a.py")).stopReason, "end_turn");
      return sid;
    });

    // A new process over the same store: it knows the session only from disk.
    const { loaded, wire, replayed, next, text } = await withAgent(
      dir,
      { args: ["--approval", "auto"] },
      async (ctx, rec) => {
        const loaded = await ctx.request(methods.agent.session.load, {
          sessionId: sid,
          cwd: dir.project,
          mcpServers: [],
        });
        const wire = [...rec.wire];
        const replayed = rec.updates.filter((n) => n.sessionId === sid).map((n) => n.update);
        rec.clear();
        const next = await say(ctx, sid, "and then?"); // the script goes on at step 2
        return { loaded, wire, replayed, next, text: rec.text(sid) };
      },
    );

    // On the wire: initialize's answer, the replay, then session/load's answer.
    const answers = wire.filter((m) => "id" in m && ("result" in m || "error" in m));
    assert.equal(answers.length, 2, JSON.stringify(wire));
    const loadAnswer = wire.indexOf(answers[1]);
    assert.ok(loadAnswer === wire.length - 1 || wire.slice(loadAnswer + 1).every((m) => m.method === "session/update"));
    const before = wire
      .slice(0, loadAnswer)
      .filter((m) => m.method === "session/update")
      .map((m) => m.params.update.sessionUpdate);
    assert.ok(before.includes("user_message_chunk"), `replayed before the answer: ${before}`);
    assert.ok(before.includes("agent_message_chunk"), `replayed before the answer: ${before}`);

    const kinds = replayed.map((u) => u.sessionUpdate).filter((k) => k !== "available_commands_update");
    assert.deepEqual(kinds, [
      "user_message_chunk",
      "agent_message_chunk",
      "tool_call",
      "tool_call_update",
      "agent_message_chunk",
    ]);
    const users = replayed.filter((u) => u.sessionUpdate === "user_message_chunk");
    assert.deepEqual(users.map((u) => u.content.text), ["write a.py"]);
    const agents = replayed.filter((u) => u.sessionUpdate === "agent_message_chunk");
    assert.deepEqual(agents.map((u) => u.content.text), ["Writing a.py.", "Wrote it."]);
    const call = replayed.find((u) => u.sessionUpdate === "tool_call");
    assert.equal(call.title, "Write a.py");
    const result = replayed.find((u) => u.sessionUpdate === "tool_call_update");
    assert.equal(result.toolCallId, call.toolCallId);
    assert.equal(result.status, "completed");
    assert.equal(loaded.modes.currentModeId, "auto");

    assert.equal(next.stopReason, "end_turn");
    assert.equal(text, "Second answer.");
  } finally {
    dir.remove();
  }
});

test("session/list lists the stored sessions, filtered by cwd", async () => {
  const dir = scratch();
  const other = path.join(dir.root, "other");
  fs.mkdirSync(other);
  try {
    const got = await withAgent(dir, { steps: [{ text: "Hello." }, { text: "Hi." }] }, async (ctx) => {
      const here = await newSession(ctx, dir);
      await say(ctx, here, "first prompt");
      const elsewhere = (await ctx.request(methods.agent.session.new, { cwd: other, mcpServers: [] }))
        .sessionId;
      await say(ctx, elsewhere, "hello"); // issue 23: a session is listed from its first prompt
      return {
        here,
        elsewhere,
        filtered: await ctx.request(methods.agent.session.list, { cwd: dir.project }),
        all: await ctx.request(methods.agent.session.list, {}),
      };
    });

    assert.deepEqual(got.filtered.sessions.map((s) => s.sessionId), [got.here]);
    const [info] = got.filtered.sessions;
    assert.equal(info.cwd, dir.project);
    assert.equal(info.title, "first prompt");
    assert.equal(typeof info.updatedAt, "string");
    assert.ok(!Number.isNaN(Date.parse(info.updatedAt)), `updatedAt ${info.updatedAt} is a date`);
    assert.deepEqual(
      new Set(got.all.sessions.map((s) => s.sessionId)),
      new Set([got.here, got.elsewhere]),
    );
    assert.equal(got.all.sessions.find((s) => s.sessionId === got.elsewhere).cwd, other);
  } finally {
    dir.remove();
  }
});

test("an unknown session id is ACP's -32002 (resource not found); a malformed one invalid params", async () => {
  const dir = scratch();
  try {
    const errors = await withAgent(dir, { steps: [] }, async (ctx) => {
      const bad = "no-such-session";
      const attempts = {
        "session/prompt": say(ctx, bad, "hello"),
        "session/load": ctx.request(methods.agent.session.load, {
          sessionId: bad,
          cwd: dir.project,
          mcpServers: [],
        }),
        "session/set_mode": ctx.request(methods.agent.session.setMode, { sessionId: bad, modeId: "auto" }),
        "_agent-host/checkpoints": ctx.request("_agent-host/checkpoints", { sessionId: bad }),
        "_agent-host/restore": ctx.request("_agent-host/restore", { sessionId: bad, seq: 1 }),
      };
      const errors = {};
      for (const [method, attempt] of Object.entries(attempts)) errors[method] = await rpcError(attempt);
      // Not an id at all (longer than 512 characters): invalid params.
      errors.malformed = await rpcError(say(ctx, "x".repeat(513), "hello"));
      // A cancel for an unknown session is a notification: no answer, and the
      // connection goes on.
      await ctx.notify(methods.agent.session.cancel, { sessionId: bad });
      errors.listAfterwards = await ctx.request(methods.agent.session.list, {});
      return errors;
    });

    const { listAfterwards, malformed, ...failures } = errors;
    assert.equal(malformed.code, -32602, malformed.message);
    assert.match(malformed.message, /session id/);
    for (const [method, error] of Object.entries(failures)) {
      // ACP v1 and both SDKs read -32002 as "not there" (issue 23, finding 3)
      assert.equal(error.code, -32002, `${method}: code ${error.code} (${error.message})`);
      assert.match(error.message, /no-such-session|session/i, method);
    }
    assert.deepEqual(listAfterwards.sessions, []);
  } finally {
    dir.remove();
  }
});

test("session/close and session/delete of an unknown session resolve: the SDK reads -32002 as done", async () => {
  const dir = scratch();
  try {
    const result = await withAgent(dir, { steps: [{ text: "ok" }] }, async (ctx, rec, initialized) => {
      const sid = await newSession(ctx, dir);
      await say(ctx, sid, "hello");
      const deleted = await ctx.request(methods.agent.session.delete, { sessionId: sid });
      const listed = await ctx.request(methods.agent.session.list, {});
      // Both idempotent in the SDK: closing or deleting what is not there is done.
      const closedUnknown = await ctx.request(methods.agent.session.close, { sessionId: "no-such-session" });
      const deletedAgain = await ctx.request(methods.agent.session.delete, { sessionId: sid });
      const errors = rec.wire.filter((m) => "error" in m).map((m) => m.error);
      return { initialized, deleted, listed, closedUnknown, deletedAgain, errors };
    });

    assert.deepEqual(result.initialized.agentCapabilities.sessionCapabilities.delete, {});
    assert.deepEqual(result.deleted, {});
    assert.deepEqual(result.listed.sessions, []);
    assert.deepEqual(result.closedUnknown, {});
    assert.deepEqual(result.deletedAgain, {});
    // What the agent answered under the SDK's success: ACP's "Resource not found".
    // data.kind names the type; data.error repeats the message (CodeCompanion shows it)
    assert.deepEqual(
      result.errors.map((e) => [e.code, e.data.kind, e.data.error === e.message]),
      [
        [-32002, "SessionNotFound", true],
        [-32002, "SessionNotFound", true],
      ],
    );
  } finally {
    dir.remove();
  }
});
