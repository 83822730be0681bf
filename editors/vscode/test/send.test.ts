/** session/send against the real server: the event stream, the result, and the
 * read-only methods over the session it leaves (list, resume, history, checkpoints). */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { REQUESTS, CANCEL, EVENT, REQUEST_PERMISSION } from '../src/protocol/methods';
import { Transcript } from '../src/protocol/transcript';
import { PROTOCOL_VERSION, type SessionEvent, type UserPromptData } from '../src/protocol/types';
import { serve } from './helpers';

const WRITE_A = "print('hi')\n";

/** Kinds in order, runs of text_delta collapsed into one. */
function shape(events: SessionEvent[]): string[] {
    const out: string[] = [];
    for (const e of events) {
        if (e.kind === 'text_delta' && out[out.length - 1] === 'text_delta') {
            continue;
        }
        out.push(e.kind);
    }
    return out;
}

test('initialize advertises protocol 1 and every method this client calls', async () => {
    const f = await serve({ steps: [] });
    try {
        const agent = f.client.initializeResult.capabilities.experimental?.agentHost;
        assert.ok(agent, 'capabilities.experimental.agentHost');
        assert.equal(agent.protocolVersion, PROTOCOL_VERSION);
        assert.deepEqual([...agent.methods].sort(), [...REQUESTS, CANCEL].sort());
        assert.deepEqual(agent.notifications, [EVENT]);
        assert.deepEqual(agent.clientRequests, [REQUEST_PERMISSION]);
    } finally {
        await f.close();
    }
});

test('send streams the turn in order and answers with its result', async () => {
    const f = await serve({
        steps: [
            {
                text: "I'll write a.py with a greeting now.",
                tool_calls: [{ name: 'write_file', arguments: { path: 'a.py', content: WRITE_A } }],
                usage: { input_tokens: 120, output_tokens: 12 },
            },
            { text: 'Done: a.py prints hi.', usage: { input_tokens: 150, output_tokens: 7 } },
        ],
        approval: 'auto',
    });
    try {
        const { api } = f.client;
        const { sessionId } = await api.newSession({ title: 'Greeting' });
        const context = [{ text: '# the project', uri: f.uri('README.md') }];
        const result = await api.send({ sessionId, prompt: 'Write a.py', context });
        const events = f.events.filter((e) => e.sessionId === sessionId);

        assert.deepEqual(shape(events), [
            'user_prompt',
            'text_delta',
            'assistant_message',
            'tool_call',
            'usage',
            'file_snapshot',
            'tool_result',
            'text_delta',
            'assistant_message',
            'usage',
            'turn_end',
        ]);
        // logged events carry increasing seqs; the prompt's is the checkpoint
        const seqs = events.map((e) => (e.data as { seq?: number }).seq).filter((s) => s !== undefined) as number[];
        assert.deepEqual(
            seqs,
            [...seqs].sort((a, b) => a - b),
        );
        assert.equal(new Set(seqs).size, seqs.length);
        const prompt = events[0];
        assert.equal(prompt.kind, 'user_prompt');
        assert.equal((prompt.data as { seq: number }).seq, result.checkpoint);
        // the prompt and its context apart (the title is the prompt's); the model reads both
        const logged = prompt.data as UserPromptData;
        assert.equal(logged.text, 'Write a.py');
        assert.deepEqual(logged.context, [{ text: '# the project', uri: f.uri('README.md') }]);
        const { messages: asLogged } = await api.history({ sessionId });
        assert.match(String(asLogged[0].content), /^Write a\.py\n\n<context uri='file:.*README\.md'>\n# the project\n<\/context>$/);
        const shown = Transcript.fromHistory(sessionId, asLogged).entries[0];
        assert.deepEqual(shown, { role: 'user', text: 'Write a.py', context: [{ uri: f.uri('README.md'), label: 'README.md (1 line)' }] });

        // the deltas of each model call add up to its assistant_message
        let streamed = '';
        const messages: string[] = [];
        for (const e of events) {
            if (e.kind === 'text_delta') {
                streamed += (e.data as { text: string }).text;
            } else if (e.kind === 'assistant_message') {
                assert.equal((e.data as { text: string }).text, streamed);
                messages.push(streamed);
                streamed = '';
            }
        }
        assert.deepEqual(messages, ["I'll write a.py with a greeting now.", 'Done: a.py prints hi.']);

        const call = events.find((e) => e.kind === 'tool_call')!.data as { callId: string; name: string; arguments: unknown };
        assert.equal(call.name, 'write_file');
        assert.deepEqual(call.arguments, { path: 'a.py', content: WRITE_A });
        const snapshot = events.find((e) => e.kind === 'file_snapshot')!.data as { path: string; before: unknown; after: unknown };
        assert.equal(snapshot.path, 'a.py');
        assert.equal(snapshot.before, null);
        assert.equal(typeof snapshot.after, 'string');
        const toolResult = events.find((e) => e.kind === 'tool_result')!.data as { callId: string; isError: boolean };
        assert.equal(toolResult.callId, call.callId);
        assert.equal(toolResult.isError, false);
        const usage = events.filter((e) => e.kind === 'usage').map((e) => e.data as { inputTokens: number; outputTokens: number; cost: number; model: string });
        assert.deepEqual(
            usage.map((u) => [u.inputTokens, u.outputTokens, u.cost, u.model]),
            [
                [120, 12, 0, `scripted:${f.script}`],
                [150, 7, 0, `scripted:${f.script}`],
            ],
        );
        assert.equal((events[events.length - 1].data as { stopReason: string }).stopReason, 'end_turn');

        assert.equal(result.sessionId, sessionId);
        assert.equal(result.stopReason, 'end_turn');
        // every model call's text, joined (the separator has been '' and '\n\n')
        assert.ok(
            ['', '\n\n'].some((sep) => result.text === messages.join(sep)),
            JSON.stringify(result.text),
        );
        assert.deepEqual(result.usage, { inputTokens: 270, outputTokens: 19 });
        assert.equal(result.cost, 0);
        assert.equal(result.totalCost, 0);
        assert.equal(f.read('a.py'), WRITE_A);

        // what the chat view shows of it
        const t = new Transcript(sessionId);
        for (const e of events) {
            t.apply(e);
        }
        t.applyResult(result);
        assert.deepEqual(
            t.entries.map((e) => e.role),
            ['user', 'assistant', 'tool', 'file', 'assistant', 'review'],
        );
        assert.equal(t.state.running, false);
        assert.deepEqual([t.state.inputTokens, t.state.outputTokens], [270, 19]);

        // the session as the other methods see it
        const listed = await api.list({});
        assert.equal(listed.nextCursor, null);
        assert.equal(listed.sessions.length, 1);
        assert.equal(listed.sessions[0].sessionId, sessionId);
        assert.equal(listed.sessions[0].title, 'Greeting');
        assert.equal(listed.sessions[0].turns, 1);
        const head = (events[events.length - 1].data as { seq: number }).seq;
        assert.equal(listed.sessions[0].head, head);
        assert.deepEqual(await api.resume(sessionId), { sessionId, head, turns: 1, totalCost: 0 });

        const { messages: history } = await api.history({ sessionId });
        assert.deepEqual(
            history.map((m) => m.role),
            ['user', 'assistant', 'tool', 'assistant'],
        );
        assert.equal(history[1].tool_calls?.[0].function.name, 'write_file');
        const rebuilt = Transcript.fromHistory(sessionId, history);
        assert.deepEqual(
            rebuilt.entries.map((e) => e.role),
            ['user', 'assistant', 'tool', 'assistant'],
        );

        const { checkpoints } = await api.checkpoints(sessionId);
        assert.equal(checkpoints.length, 1);
        assert.equal(checkpoints[0].seq, result.checkpoint);
        assert.deepEqual(checkpoints[0].files, ['a.py']);
        assert.match(checkpoints[0].prompt, /^Write a\.py/);
    } finally {
        await f.close();
    }
});

test('list pages with limit and nextCursor; a session with no prompt is listed nowhere', async () => {
    const f = await serve({ steps: [{ text: 'ok' }] });
    try {
        const { api } = f.client;
        const ids = [];
        for (const title of ['one', 'two', 'three']) {
            ids.push((await api.newSession({ title })).sessionId);
            // a session is stored, and listed, from its first prompt
            await api.send({ sessionId: ids[ids.length - 1], prompt: title });
        }
        const unprompted = (await api.newSession({ title: 'never prompted' })).sessionId;
        assert.ok(!(await api.listAll(1)).some((s) => s.sessionId === unprompted));
        const first = await api.list({ limit: 2 });
        assert.equal(first.sessions.length, 2);
        assert.notEqual(first.nextCursor, null);
        const second = await api.list({ limit: 2, cursor: first.nextCursor });
        assert.equal(second.sessions.length, 1);
        assert.equal(second.nextCursor, null);
        const all = await api.listAll(1);
        assert.deepEqual(all.map((s) => s.sessionId).sort(), [...ids].sort());
        assert.deepEqual(
            all.map((s) => s.sessionId),
            [...first.sessions, ...second.sessions].map((s) => s.sessionId),
        );
    } finally {
        await f.close();
    }
});

test('list with a workspace: the sessions started in that folder, each naming its folder', async () => {
    const here = await serve({ steps: [{ text: 'ok' }] });
    const there = await serve({ steps: [{ text: 'ok' }], store: here.store });
    try {
        const mine = (await here.client.api.newSession({ title: 'here' })).sessionId;
        const theirs = (await there.client.api.newSession({ title: 'there' })).sessionId;
        // (prompted: a session is listed from its first prompt)
        await here.client.api.send({ sessionId: mine, prompt: 'hi' });
        await there.client.api.send({ sessionId: theirs, prompt: 'hi' });
        const folders = new Map([
            [mine, fs.realpathSync(here.root)],
            [theirs, fs.realpathSync(there.root)],
        ]);
        const all = await here.client.api.listAll();
        assert.deepEqual(new Map(all.map((s) => [s.sessionId, s.workspace])), folders);
        for (const workspace of [pathToFileURL(here.root).href, here.root]) {
            const only = await here.client.api.list({ workspace });
            assert.deepEqual(only.sessions.map((s) => s.sessionId), [mine], workspace);
        }
        assert.deepEqual(
            (await here.client.api.listAll(10, pathToFileURL(there.root).href)).map((s) => s.sessionId),
            [theirs],
        );
    } finally {
        await there.close();
        await here.close();
    }
});

test('a send without a sessionId starts a session, and its events name it', async () => {
    const f = await serve({ steps: [{ text: 'Hello.' }] });
    try {
        const result = await f.client.api.send({ prompt: 'hi' });
        assert.equal(result.stopReason, 'end_turn');
        assert.ok(f.events.length > 0);
        assert.ok(f.events.every((e) => e.sessionId === result.sessionId));
    } finally {
        await f.close();
    }
});
