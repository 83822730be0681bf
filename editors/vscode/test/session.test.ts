/** Work-done progress, compaction, and the errors the commands show. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../src/protocol/api';
import { ErrorCode } from '../src/protocol/methods';
import { Transcript } from '../src/protocol/transcript';
import { serve } from './helpers';

test('send and compact are wrapped in $/progress; compaction streams its stages', async () => {
    const f = await serve({
        workDoneProgress: true,
        // long enough that its summary is shorter: a compaction that would not shrink
        // the history is skipped
        steps: [{ text: 'The first answer, ' + 'with a few words in it. '.repeat(40) }, { text: 'The second answer.' }],
    });
    try {
        const { api } = f.client;
        const { sessionId } = await api.newSession();
        await api.send({ sessionId, prompt: 'First question' });
        await api.send({ sessionId, prompt: 'Second question' });
        const kinds = f.client.progress.map((p) => p.value.kind);
        assert.deepEqual(kinds, ['begin', 'end', 'begin', 'end']);
        const [first, , second] = f.client.progress;
        assert.equal(first.value.title, 'agent-host: First question');
        assert.equal(second.value.title, 'agent-host: Second question');
        assert.notEqual(first.token, second.token);
        assert.equal(f.client.progress[1].token, first.token);

        f.events.length = 0;
        const compacted = await api.compact({ sessionId, instructions: 'Keep the questions.' });
        assert.ok(compacted.before > compacted.after && compacted.after > 0);
        const stages = f.events
            .filter((e) => e.kind === 'compaction_progress')
            .map((e) => (e.data as { stage: string }).stage);
        assert.deepEqual(stages, ['started', 'summarising', 'done']);
        assert.equal(f.client.progress.length, 6, 'compact has its progress too');
        assert.equal(f.client.progress[4].value.title, 'agent-host: compacting');

        // the history now starts with the summary, which the chat view shows as a note
        const { messages } = await api.history({ sessionId });
        const t = Transcript.fromHistory(sessionId, messages);
        assert.equal(t.entries[0].role, 'info');
        assert.match((t.entries[0] as { text: string }).text, /^Summary of the conversation so far:/);
    } finally {
        await f.close();
    }
});

async function rejects(promise: Promise<unknown>, code: number): Promise<AgentError> {
    try {
        await promise;
    } catch (err) {
        assert.ok(err instanceof AgentError, `an AgentError, not ${String(err)}`);
        assert.equal(err.code, code, err.message);
        return err;
    }
    assert.fail(`expected error ${code}`);
}

test('errors arrive as AgentError with the wire code, its name and a message to show', async () => {
    const f = await serve({ steps: [{ text: 'slow', delay_ms: 400 }] });
    try {
        const { api } = f.client;
        const { sessionId } = await api.newSession();

        const nothing = await rejects(api.undoRestore(sessionId), ErrorCode.INCOMPATIBLE_STATE);
        assert.equal(nothing.codeName, 'INCOMPATIBLE_STATE');
        assert.match(nothing.message, /nothing to undo/);
        assert.equal(nothing.serverError, 'NothingToUndo');

        const empty = await rejects(api.send({ sessionId, prompt: '' }), ErrorCode.INVALID_PARAMS);
        assert.equal(empty.codeName, 'INVALID_PARAMS');
        await rejects(api.history({ sessionId: 'a\u0000b' }), ErrorCode.INVALID_PARAMS);

        const running = api.send({ sessionId, prompt: 'One' });
        const busy = await rejects(api.send({ sessionId, prompt: 'Two' }), ErrorCode.TURN_IN_PROGRESS);
        assert.equal(busy.codeName, 'TURN_IN_PROGRESS');
        await rejects(api.restore({ sessionId, seq: 2 }), ErrorCode.TURN_IN_PROGRESS);
        const first = await running;
        assert.equal(first.stopReason, 'end_turn');

        const missing = await rejects(api.restore({ sessionId, seq: 999 }), ErrorCode.CHECKPOINT_NOT_FOUND);
        assert.match(missing.message, new RegExp(`\\[${first.checkpoint}\\]`));

        const exhausted = await rejects(api.send({ sessionId, prompt: 'Again' }), ErrorCode.MODEL_ERROR);
        assert.match(exhausted.message, /exhausted/);

        await rejects(api.deleteSession('no-such-session'), ErrorCode.SESSION_NOT_FOUND);
        assert.equal(await api.deleteSession(sessionId), null);
        assert.deepEqual((await api.list({})).sessions, []);
    } finally {
        await f.close();
    }
});
