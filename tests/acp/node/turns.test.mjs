// Turns over ACP through the TypeScript SDK: initialize, a streamed turn with a
// tool call that writes a file, permission asks answered both ways, cancel.

import assert from "node:assert/strict";
import { test } from "node:test";

import { methods, newSession, say, scratch, withAgent } from "./harness.mjs";

const WRITE_A = { name: "write_file", arguments: { path: "a.py", content: "x\n" } };
const WRITE_B = { name: "write_file", arguments: { path: "b.py", content: "b = 2\n" } };

test("initialize answers protocol version 1 and advertises loadSession", async () => {
  const dir = scratch();
  try {
    const { answer, newer } = await withAgent(dir, { steps: [] }, async (ctx, _rec, initialized) => ({
      answer: initialized,
      // A version the agent does not speak: it answers with the latest it does.
      newer: await ctx.request(methods.agent.initialize, { protocolVersion: 99, clientCapabilities: {} }),
    }));
    assert.equal(answer.protocolVersion, 1);
    assert.equal(answer.agentCapabilities.loadSession, true);
    assert.equal(newer.protocolVersion, 1);
    assert.deepEqual(answer.authMethods, []);
    assert.equal(answer.agentInfo.name, "agent-host");
    assert.ok(answer.agentCapabilities.sessionCapabilities.list, "session/list is advertised");
    assert.deepEqual(answer.agentCapabilities._meta["agent-host"].methods, [
      "_agent-host/checkpoints",
      "_agent-host/restore",
      "_agent-host/restorePreview",
      "_agent-host/changes",
      "_agent-host/revertFiles",
      "_agent-host/undoRestore",
      "_agent-host/compact",
      "_agent-host/fork",
      "_agent-host/delete",
    ]);
  } finally {
    dir.remove();
  }
});

test("a prompt streams agent_message_chunk and a write_file tool call that lands on disk", async () => {
  const dir = scratch();
  const steps = [
    { text: "Writing a.py for you now.", tool_calls: [WRITE_A] },
    { text: "done" },
  ];
  try {
    // Through the SDK's session helper: buildSession -> ActiveSession -> nextUpdate.
    const { created, messages, response } = await withAgent(
      dir,
      { steps, args: ["--approval", "auto"] },
      (ctx) =>
        ctx.buildSession(dir.project).withSession(async (session) => {
          const turn = session.prompt([{ type: "text", text: "write a.py" }]);
          const messages = [];
          for (;;) {
            const message = await session.nextUpdate();
            if (message.kind === "stop") break;
            messages.push(message.update);
          }
          return { created: session.newSessionResponse, messages, response: await turn };
        }),
    );

    assert.match(created.sessionId, /\S/);
    assert.equal(created.modes.currentModeId, "auto");
    assert.equal(response.stopReason, "end_turn");
    assert.equal(dir.read("a.py"), "x\n");

    const text = messages
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content.text)
      .join("");
    assert.equal(text, "Writing a.py for you now.done");
    assert.ok(
      messages.filter((u) => u.sessionUpdate === "agent_message_chunk").length > 1,
      "the text arrives in more than one chunk",
    );

    const [started] = messages.filter((u) => u.sessionUpdate === "tool_call");
    assert.ok(started, "a tool_call update");
    assert.equal(started.kind, "edit");
    assert.equal(started.title, "Write a.py");
    assert.equal(started.status, "pending");
    assert.deepEqual(started.rawInput, WRITE_A.arguments);
    assert.equal(started.locations[0].path, dir.file("a.py"));

    const updates = messages.filter(
      (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === started.toolCallId,
    );
    const done = updates.at(-1);
    assert.equal(done.status, "completed");
    const diff = done.content.find((c) => c.type === "diff");
    assert.deepEqual(
      { path: diff.path, oldText: diff.oldText, newText: diff.newText },
      { path: dir.file("a.py"), oldText: "original\n", newText: "x\n" },
    );
    // In order: the call starts, then completes, then the next step's text streams.
    const at = (u) => messages.indexOf(u);
    const doneText = messages.findLast((u) => u.sessionUpdate === "agent_message_chunk");
    assert.equal(doneText.content.text, "done");
    assert.ok(at(started) < at(done) && at(done) < at(doneText));
  } finally {
    dir.remove();
  }
});

test("ask mode: a permission request answered allow_once writes the file", async () => {
  const dir = scratch();
  const steps = [{ tool_calls: [WRITE_A] }, { text: "Written." }];
  try {
    const { sid, answer, rec } = await withAgent(dir, { steps, args: ["--approval", "ask"] }, async (ctx, rec) => {
      rec.answer = "allow_once";
      const sid = await newSession(ctx, dir);
      return { sid, answer: await say(ctx, sid, "write a.py"), rec };
    });

    assert.equal(answer.stopReason, "end_turn");
    assert.equal(dir.read("a.py"), "x\n");
    assert.equal(rec.permissions.length, 1);
    const [asked] = rec.permissions;
    assert.equal(asked.sessionId, sid);
    const ids = asked.options.map((o) => [o.optionId, o.kind]);
    assert.deepEqual(
      ids.filter(([id]) => id === "allow_once" || id === "reject_once"),
      [["allow_once", "allow_once"], ["reject_once", "reject_once"]],
    );
    const [started] = rec.of("tool_call", sid);
    assert.equal(asked.toolCall.toolCallId, started.toolCallId, "the ask names the tool call");
    assert.equal(asked.toolCall.kind, "edit");
    assert.equal(asked.toolCall.title, "Write a.py");
    const [diff] = asked.toolCall.content;
    assert.deepEqual([diff.type, diff.oldText, diff.newText], ["diff", "original\n", "x\n"]);
    const done = rec.of("tool_call_update", sid).filter((u) => u.toolCallId === started.toolCallId).at(-1);
    assert.equal(done.status, "completed");
    assert.equal(rec.text(sid), "Written.");
  } finally {
    dir.remove();
  }
});

test("ask mode: a permission request answered reject_once leaves the file unwritten", async () => {
  const dir = scratch();
  const steps = [{ tool_calls: [WRITE_B] }, { text: "Not allowed, then." }];
  try {
    const { sid, answer, rec } = await withAgent(dir, { steps }, async (ctx, rec) => {
      rec.answer = "reject_once";
      const sid = await newSession(ctx, dir);
      return { sid, answer: await say(ctx, sid, "write b.py"), rec };
    });

    assert.equal(answer.stopReason, "end_turn");
    assert.equal(rec.permissions.length, 1);
    assert.equal(dir.exists("b.py"), false);
    const [started] = rec.of("tool_call", sid);
    const done = rec.of("tool_call_update", sid).filter((u) => u.toolCallId === started.toolCallId).at(-1);
    assert.equal(done.status, "failed");
    assert.match(done.content.at(-1).content.text, /Permission denied/);
    assert.equal(rec.text(sid), "Not allowed, then.");
  } finally {
    dir.remove();
  }
});

test("session/cancel during a slow step ends the turn with stopReason cancelled", async () => {
  const dir = scratch();
  const words = Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ");
  const steps = [{ text: words, delay_ms: 400 }]; // 10 chunks, 4 s in all
  try {
    const { answer, afterCancel, chunks } = await withAgent(dir, { steps }, async (ctx, rec) => {
      const sid = await newSession(ctx, dir);
      const turn = say(ctx, sid, "take your time");
      await rec.waitFor((n) => n.sessionId === sid && n.update.sessionUpdate === "agent_message_chunk");
      const cancelledAt = Date.now();
      await ctx.notify(methods.agent.session.cancel, { sessionId: sid });
      const answer = await turn;
      return { answer, afterCancel: Date.now() - cancelledAt, chunks: rec.of("agent_message_chunk", sid).length };
    });

    assert.equal(answer.stopReason, "cancelled");
    assert.ok(afterCancel < 2_000, `the turn ended ${afterCancel} ms after the cancel`);
    assert.ok(chunks < 10, `${chunks} of 10 chunks arrived before the turn ended`);
  } finally {
    dir.remove();
  }
});

// ACP's cancel flow: the client sends session/cancel, then answers every pending
// session/request_permission with {outcome: "cancelled"}; the agent MUST answer the
// session/prompt with stopReason "cancelled" -- whichever of the two it handles
// first (the Python SDK runs the notification in a task of its own).
test("session/cancel while a permission request is pending: cancelled, file unwritten", async () => {
  const dir = scratch();
  const steps = [{ tool_calls: [WRITE_B] }, { text: "never played" }];
  try {
    const { answer, rec, sid } = await withAgent(dir, { steps }, async (ctx, rec) => {
      // What ACP asks of a client on cancel: send session/cancel, then answer
      // its pending permission requests with the cancelled outcome.
      rec.answer = async ({ params, agent }) => {
        await agent.notify(methods.agent.session.cancel, { sessionId: params.sessionId });
        return { outcome: { outcome: "cancelled" } };
      };
      const sid = await newSession(ctx, dir);
      return { answer: await say(ctx, sid, "write b.py"), rec, sid };
    });

    assert.equal(answer.stopReason, "cancelled");
    assert.equal(rec.permissions.length, 1);
    assert.equal(dir.exists("b.py"), false);
    assert.equal(rec.text(sid), "", "the turn did not go on to the next step");
    const [started] = rec.of("tool_call", sid);
    const done = rec.of("tool_call_update", sid).filter((u) => u.toolCallId === started.toolCallId).at(-1);
    assert.notEqual(done?.status, "completed");
  } finally {
    dir.remove();
  }
});
