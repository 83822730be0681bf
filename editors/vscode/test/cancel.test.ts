/** session/cancel: a running turn ends with stopReason "cancelled" and the session goes on. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serve, waitFor } from './helpers';

const SLOW = 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen';

test('cancel after the first text delta ends the turn as cancelled; the next turn runs', async () => {
    const f = await serve({
        steps: [{ text: SLOW, delay_ms: 200 }, { text: 'After the cancel.' }, { text: SLOW, delay_ms: 300 }],
    });
    try {
        const { api } = f.client;
        const { sessionId } = await api.newSession();
        const turn = api.send({ sessionId, prompt: 'Count slowly' });
        await waitFor(() => f.events.some((e) => e.kind === 'text_delta'), 'the first text delta');
        await api.cancel(sessionId);
        const result = await turn;
        assert.equal(result.stopReason, 'cancelled');
        assert.ok(SLOW.startsWith(result.text) && result.text.length > 0 && result.text.length < SLOW.length, result.text);
        const last = f.events[f.events.length - 1];
        assert.equal(last.kind, 'turn_end');
        assert.equal((last.data as { stopReason: string }).stopReason, 'cancelled');
        // the partial text is logged (so the next turn is the script's step 1)
        const { messages } = await api.history({ sessionId });
        assert.deepEqual(
            messages.map((m) => [m.role, m.content]),
            [
                ['user', 'Count slowly'],
                ['assistant', result.text],
            ],
        );

        const next = await api.send({ sessionId, prompt: 'Go on' });
        assert.equal(next.stopReason, 'end_turn');
        assert.equal(next.text, 'After the cancel.');

        // cancelTurn repeats session/cancel until the turn answers, so a cancel sent
        // before the turn has even started still ends it
        const third = api.send({ sessionId, prompt: 'Count again' });
        const cancelled = await api.cancelTurn(sessionId, third, 100);
        assert.equal(cancelled.stopReason, 'cancelled');
    } finally {
        await f.close();
    }
});

/** A turn waiting on a permission answer, cancelled; `late` answers the question afterwards. */
async function cancelDuringPermission() {
    const f = await serve({
        approval: 'ask',
        steps: [
            { text: 'Writing.', tool_calls: [{ name: 'write_file', arguments: { path: 'x.txt', content: 'x' } }] },
            { text: 'unused' },
        ],
    });
    const { api } = f.client;
    const { sessionId } = await api.newSession();
    let asked = false;
    let answer: (d: 'allow_once') => void = () => undefined;
    api.setPermissionHandler(
        () =>
            new Promise((resolve) => {
                asked = true;
                answer = resolve; // the user has not answered yet
            }),
    );
    const turn = api.send({ sessionId, prompt: 'Write x' });
    await waitFor(() => asked, 'the permission request');
    const started = Date.now();
    await api.cancel(sessionId);
    const result = await turn;
    return { f, api, sessionId, result, elapsed: Date.now() - started, late: () => answer('allow_once') };
}

test('cancel while the server waits for a permission answer', async () => {
    const { f, api, sessionId, result, elapsed, late } = await cancelDuringPermission();
    try {
        assert.equal(result.stopReason, 'cancelled');
        assert.ok(elapsed < 5000, 'the cancel did not wait for the permission answer');
        assert.equal(f.read('x.txt'), undefined);
        const { messages } = await api.history({ sessionId });
        const tool = messages.find((m) => m.role === 'tool');
        assert.ok(tool, 'the call is answered in the log');
        assert.match(String(tool.content), /cancel/i);
        // the user answers the stale question later: nothing is written, the server goes on
        late();
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(f.read('x.txt'), undefined);
        assert.equal((await api.list({})).sessions.length, 1);
    } finally {
        await f.close();
    }
});

test(
    'a late answer to a permission request of a cancelled turn is ignored quietly',
    async () => {
        const { f, late } = await cancelDuringPermission();
        try {
            late();
            await new Promise((r) => setTimeout(r, 500));
            assert.doesNotMatch(f.client.stderr(), /Unable to handle message|InvalidStateError/);
        } finally {
            await f.close();
        }
    },
);

test(
    'a cancel that lands as the turn ends still answers with the turn it ended',
    async () => {
        const f = await serve({ steps: [{ text: 'one', delay_ms: 50 }] });
        try {
            const { api } = f.client;
            const wrong: string[] = [];
            for (let run = 0; run < 60; run++) {
                const { sessionId } = await api.newSession();
                const mark = f.events.length;
                const turn = api.send({ sessionId, prompt: 'go' });
                await waitFor(() => f.events.slice(mark).some((e) => e.kind === 'text_delta'), 'the text');
                const until = Date.now() + (run % 6);
                while (Date.now() < until) {
                    // land the cancel 0-5 ms after the last delta: around the turn's end
                }
                void api.cancel(sessionId);
                const result = await turn;
                const mine = f.events.slice(mark);
                const prompt = mine.find((e) => e.kind === 'user_prompt')!.data as { seq: number };
                const end = mine.find((e) => e.kind === 'turn_end')?.data as { stopReason: string } | undefined;
                if (result.checkpoint !== prompt.seq || end?.stopReason !== result.stopReason) {
                    wrong.push(`run ${run}: ${JSON.stringify(result)}, turn_end ${JSON.stringify(end)}`);
                }
            }
            assert.deepEqual(wrong, []);
        } finally {
            await f.close();
        }
    },
);

test(
    'a cancel as the model call is being logged leaves one assistant message and relays every event',
    async () => {
        const f = await serve({
            approval: 'ask',
            store: 'memory:', // the race is most often seen with the fastest store
            steps: [{ text: 'Writing.', tool_calls: [{ name: 'write_file', arguments: { path: 'x.txt', content: 'x' } }] }],
        });
        try {
            const { api } = f.client;
            api.setPermissionHandler(() => 'allow_once');
            const wrong: string[] = [];
            for (let run = 0; run < 20; run++) {
                const { sessionId } = await api.newSession();
                const mark = f.events.length;
                const turn = api.send({ sessionId, prompt: 'Write x' });
                void api.cancel(sessionId); // often lands while the model call's events are appended
                const result = await turn;
                const seqs = f.events
                    .slice(mark)
                    .map((e) => (e.data as { seq?: number }).seq)
                    .filter((s): s is number => s !== undefined);
                const gaps = seqs.some((s, i) => i > 0 && s !== seqs[i - 1] + 1);
                const { messages } = await api.history({ sessionId });
                const assistants = messages.filter((m) => m.role === 'assistant').length;
                if (gaps || assistants > 1) {
                    wrong.push(`run ${run} (${result.stopReason}): relayed seqs ${seqs.join(',')}; history ${JSON.stringify(messages)}`);
                }
            }
            assert.deepEqual(wrong, []);
        } finally {
            await f.close();
        }
    },
);
