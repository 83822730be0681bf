/** session/fork and session/close over the protocol client (api.fork, api.close). */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentError } from '../src/protocol/api';
import { ErrorCode } from '../src/protocol/methods';
import type { ChatMessage } from '../src/protocol/types';
import { serve, waitFor } from './helpers';

const SLOW = 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen';

function said(messages: ChatMessage[]): [string, unknown][] {
    return messages.map((m) => [m.role, m.content]);
}

test('api.fork: up to a checkpoint, or the whole conversation; the source is untouched; a seq that is no checkpoint is -32003', async () => {
    // the scripted model plays the step numbered by the assistant messages already in
    // the session, so a fork with one of them goes on with step 1
    const f = await serve({ steps: [{ text: 'First answer.' }, { text: 'Second answer.' }] });
    try {
        const { api } = f.client;
        const { sessionId } = await api.newSession({ title: 'Source' });
        await api.send({ sessionId, prompt: 'First question' });
        const second = await api.send({ sessionId, prompt: 'Second question' });

        const before = await api.fork({ sessionId, seq: second.checkpoint });
        assert.notEqual(before.sessionId, sessionId);
        assert.deepEqual(said((await api.history({ sessionId: before.sessionId })).messages), [
            ['user', 'First question'],
            ['assistant', 'First answer.'],
        ]);
        const whole = await api.fork({ sessionId, title: 'Everything' });
        const all = [
            ['user', 'First question'],
            ['assistant', 'First answer.'],
            ['user', 'Second question'],
            ['assistant', 'Second answer.'],
        ];
        assert.deepEqual(said((await api.history({ sessionId: whole.sessionId })).messages), all);
        const titles = new Map((await api.list({})).sessions.map((s) => [s.sessionId, s.title]));
        assert.equal(titles.get(before.sessionId), 'fork of Source');
        assert.equal(titles.get(whole.sessionId), 'Everything');

        // the fork goes on by itself; the source is as it was
        const next = await api.send({ sessionId: before.sessionId, prompt: 'Another second question' });
        assert.equal(next.stopReason, 'end_turn');
        assert.deepEqual(said((await api.history({ sessionId: before.sessionId })).messages).slice(2), [
            ['user', 'Another second question'],
            ['assistant', 'Second answer.'],
        ]);
        assert.deepEqual(said((await api.history({ sessionId })).messages), all);

        await assert.rejects(api.fork({ sessionId, seq: second.checkpoint + 1 }), (err: unknown) => {
            assert.ok(err instanceof AgentError);
            assert.equal(err.code, ErrorCode.CHECKPOINT_NOT_FOUND);
            return true;
        });
    } finally {
        await f.close();
    }
});

test('api.close stops a running turn; the session stays stored and takes the next prompt', async () => {
    const f = await serve({ steps: [{ text: SLOW, delay_ms: 200 }, { text: 'After the close.' }] });
    try {
        const { api } = f.client;
        const { sessionId } = await api.newSession();
        const turn = api.send({ sessionId, prompt: 'Count slowly' });
        await waitFor(() => f.events.some((e) => e.kind === 'text_delta'), 'the first text delta');
        assert.equal(await api.close(sessionId), null);
        const cancelled = await turn;
        assert.equal(cancelled.stopReason, 'cancelled');
        assert.equal(await api.close(sessionId), null, 'closing a session the server does not hold is fine');

        const next = await api.send({ sessionId, prompt: 'Go on' });
        assert.equal(next.stopReason, 'end_turn');
        assert.equal(next.text, 'After the close.');
        assert.deepEqual(
            said((await api.history({ sessionId })).messages).map(([role]) => role),
            ['user', 'assistant', 'user', 'assistant'],
        );
        assert.deepEqual(
            (await api.list({})).sessions.map((s) => s.sessionId),
            [sessionId],
        );
    } finally {
        await f.close();
    }
});
