// Rewinding over ACP through the TypeScript SDK: the /checkpoints and /rewind
// slash commands, and the _agent-host/checkpoints and _agent-host/restore
// extension methods (called with the SDK's request() for custom methods).

import assert from "node:assert/strict";
import { test } from "node:test";

import { methods, newSession, rpcError, say, scratch, withAgent } from "./harness.mjs";

const WRITES_A = [
  {
    text: "Writing a.py.",
    tool_calls: [{ name: "write_file", arguments: { path: "a.py", content: "x\n" } }],
  },
  { text: "done" },
];

test("/checkpoints lists the prompt's checkpoint and /rewind SEQ restores the file", async () => {
  const dir = scratch();
  try {
    const got = await withAgent(dir, { steps: WRITES_A, args: ["--approval", "auto"] }, async (ctx, rec) => {
      const sid = await newSession(ctx, dir);
      await say(ctx, sid, "write a.py");
      const written = dir.read("a.py");

      rec.clear();
      const listed = await say(ctx, sid, "/checkpoints");
      const listing = rec.text(sid);

      const seq = /^- (\d+)\s/m.exec(listing)?.[1];
      assert.ok(seq, `a checkpoint line in ${JSON.stringify(listing)}`);
      rec.clear();
      const rewound = await say(ctx, sid, `/rewind ${seq}`);
      const rewindText = rec.text(sid);

      rec.clear();
      await ctx.request(methods.agent.session.load, { sessionId: sid, cwd: dir.project, mcpServers: [] });
      const users = rec.of("user_message_chunk", sid).map((u) => u.content.text);
      return { written, listed, listing, rewound, rewindText, users };
    });

    assert.equal(got.written, "x\n");
    assert.equal(got.listed.stopReason, "end_turn");
    assert.match(got.listing, /^Checkpoints \(rewind with \/rewind SEQ\):/);
    assert.match(got.listing, /'write a\.py'/);
    assert.match(got.listing, /a\.py/);
    assert.equal(got.rewound.stopReason, "end_turn");
    assert.match(got.rewindText, /^Rewound to just before 'write a\.py'/);
    assert.equal(dir.read("a.py"), "original\n", "the file is as it was before the prompt");
    // The conversation went back too: the rewound prompt is no longer replayed.
    assert.ok(!got.users.includes("write a.py"), `replayed prompts: ${JSON.stringify(got.users)}`);
  } finally {
    dir.remove();
  }
});

test("/rewind -1 goes one prompt back; /rewind with a bad target says so", async () => {
  const dir = scratch();
  try {
    const got = await withAgent(dir, { steps: WRITES_A, args: ["--approval", "auto"] }, async (ctx, rec) => {
      const sid = await newSession(ctx, dir);
      await say(ctx, sid, "write a.py");
      rec.clear();
      await say(ctx, sid, "/rewind 999");
      const bad = rec.text(sid);
      const afterBad = dir.read("a.py");
      rec.clear();
      await say(ctx, sid, "/rewind -1");
      return { bad, afterBad, text: rec.text(sid) };
    });

    assert.match(got.bad, /^No checkpoint '999'/);
    assert.equal(got.afterBad, "x\n");
    assert.match(got.text, /^Rewound to just before 'write a\.py'/);
    assert.equal(dir.read("a.py"), "original\n");
  } finally {
    dir.remove();
  }
});

test("_agent-host/checkpoints and _agent-host/restore through the SDK's ext-method call", async () => {
  const dir = scratch();
  try {
    const got = await withAgent(dir, { steps: WRITES_A, args: ["--approval", "auto"] }, async (ctx) => {
      const sid = await newSession(ctx, dir);
      await say(ctx, sid, "write a.py");
      const written = dir.read("a.py");
      const listed = await ctx.request("_agent-host/checkpoints", { sessionId: sid });
      const badSeq = await rpcError(ctx.request("_agent-host/restore", { sessionId: sid, seq: "three" }));
      const seq = listed.checkpoints[0].seq;
      const restored = await ctx.request("_agent-host/restore", { sessionId: sid, seq });
      const afterRestore = dir.read("a.py");
      const afterList = await ctx.request("_agent-host/checkpoints", { sessionId: sid });
      const undone = await ctx.request("_agent-host/undoRestore", { sessionId: sid });
      return { written, listed, badSeq, restored, afterRestore, afterList, undone };
    });

    assert.equal(got.written, "x\n");
    assert.equal(got.listed.checkpoints.length, 1);
    const [checkpoint] = got.listed.checkpoints;
    assert.equal(typeof checkpoint.seq, "number");
    assert.equal(checkpoint.prompt, "write a.py");
    assert.equal(typeof checkpoint.createdAt, "string");
    assert.deepEqual(checkpoint.files, ["a.py"]);

    assert.equal(got.badSeq.code, -32602);
    assert.match(got.badSeq.message, /seq/);

    assert.deepEqual(got.restored.restoredFiles, ["a.py"]);
    assert.ok(got.restored.removedEvents > 0, JSON.stringify(got.restored));
    assert.deepEqual(got.restored.conflicts, []);
    assert.deepEqual(got.restored.notCaptured, []);
    assert.equal(got.afterRestore, "original\n");
    assert.deepEqual(got.afterList.checkpoints, [], "the conversation went back to before the prompt");

    assert.deepEqual(got.undone.restoredFiles, ["a.py"]);
    assert.equal(dir.read("a.py"), "x\n", "undoRestore takes the restore back");
  } finally {
    dir.remove();
  }
});

// With fs offered (issue 23): the client writes; /rewind and /undo-rewind go
// through it too.
test("with fs offered, an edit lands through fs/write_text_file; /rewind restores it and /undo-rewind brings it back", async () => {
  const dir = scratch();
  try {
    const got = await withAgent(dir, { steps: WRITES_A, args: ["--approval", "auto"], fs: true }, async (ctx, rec) => {
      const sid = await newSession(ctx, dir);
      await say(ctx, sid, "write a.py");
      const written = dir.read("a.py");
      const editWrites = rec.writes.length;
      const toolStatus = rec.of("tool_call_update", sid).map((u) => u.status).filter((s) => s === "completed" || s === "failed");
      rec.clear();
      await say(ctx, sid, "/rewind");
      const rewindText = rec.text(sid);
      const rewound = dir.read("a.py");
      rec.clear();
      await say(ctx, sid, "/undo-rewind");
      return { written, editWrites, toolStatus, rewindText, rewound, undoText: rec.text(sid), writes: rec.writes };
    });

    assert.equal(got.written, "x\n");
    assert.equal(got.editWrites, 1, "the edit reached the client once");
    assert.deepEqual(got.toolStatus, ["completed"]);
    assert.match(got.rewindText, /^Rewound to just before 'write a\.py'.*(?<!Not )restored (?:\d+ files? \()?a\.py/);
    assert.equal(got.rewound, "original\n");
    assert.match(got.undoText, /^Undid the last rewind: restored (?:\d+ files? \()?a\.py/);
    assert.equal(dir.read("a.py"), "x\n");
  } finally {
    dir.remove();
  }
});

test("with fs offered, the agent writes only through the client: the disk is untouched until the client writes", async () => {
  const dir = scratch();
  try {
    const writes = await withAgent(dir, { steps: WRITES_A, args: ["--approval", "auto"], fs: true }, async (ctx, rec) => {
      const sid = await newSession(ctx, dir);
      await say(ctx, sid, "write a.py");
      return rec.writes;
    });
    assert.deepEqual(
      writes.map((w) => [w.content, w.diskBefore]),
      [["x\n", "original\n"]],
    );
  } finally {
    dir.remove();
  }
});

test("with fs offered, a write the client refuses fails the tool call and leaves the disk", async () => {
  const dir = scratch();
  try {
    const got = await withAgent(dir, { steps: WRITES_A, args: ["--approval", "auto"], fs: true }, async (ctx, rec) => {
      rec.refuseWrites = true;
      const sid = await newSession(ctx, dir);
      await say(ctx, sid, "write a.py");
      const status = rec.of("tool_call_update", sid).map((u) => u.status).filter((s) => s === "completed" || s === "failed");
      return { status, writes: rec.writes.length };
    });
    assert.equal(got.writes, 1);
    assert.deepEqual(got.status, ["failed"]);
    assert.equal(dir.read("a.py"), "original\n");
  } finally {
    dir.remove();
  }
});
