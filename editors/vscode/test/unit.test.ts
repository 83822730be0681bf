/** The protocol layer's pure parts, without a server. */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CancellationToken } from 'vscode-jsonrpc';
import { AgentApi, AgentError, type RpcEndpoint } from '../src/protocol/api';
import { MemoryEditor, applyTextEdits, offsetAt, wholeRange } from '../src/protocol/edits';
import { errorName } from '../src/protocol/methods';
import { proposedContent, pyReplace } from '../src/protocol/proposal';
import { checkpointDetail, conflictsText, listPaths, notCapturedText, outsideChangesText } from '../src/protocol/restoreText';
import { expandHome, initializationOptions, resolveServerCommand } from '../src/protocol/server';
import * as os from 'node:os';
import * as path from 'node:path';
import { Transcript, formatCost, toMarkdown } from '../src/protocol/transcript';
import type { PermissionParams, SessionEvent } from '../src/protocol/types';

/** An endpoint that records what is sent and lets the test play the server. */
function fakeEndpoint() {
    const notifications = new Map<string, (params: any) => void>();
    const requests = new Map<string, (params: any, token: CancellationToken) => unknown>();
    const sent: { method: string; params: unknown }[] = [];
    const never: CancellationToken = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) };
    let reply: (method: string, params: unknown) => unknown = () => null;
    const endpoint: RpcEndpoint = {
        request: async <R>(method: string, params: unknown) => {
            sent.push({ method, params });
            return reply(method, params) as R;
        },
        notify: (method, params) => void sent.push({ method, params }),
        onNotification: (method, handler) => {
            notifications.set(method, handler);
            return { dispose: () => notifications.delete(method) };
        },
        onRequest: (method, handler) => {
            requests.set(method, handler);
            return { dispose: () => requests.delete(method) };
        },
    };
    return {
        endpoint,
        sent,
        setReply: (f: typeof reply) => (reply = f),
        notify: (method: string, params: unknown) => notifications.get(method)!(params),
        request: (method: string, params: unknown) => requests.get(method)!(params, never),
    };
}

describe('text edits', () => {
    test('positions are UTF-16 units, clamped to the line', () => {
        const text = 'a🙂b\r\nxy\n';
        assert.equal(offsetAt(text, { line: 0, character: 3 }), 3); // after the emoji's two units
        assert.equal(offsetAt(text, { line: 0, character: 99 }), 4); // clamped before \r\n
        assert.equal(offsetAt(text, { line: 1, character: 1 }), 7);
        assert.equal(offsetAt(text, { line: 2, character: 0 }), 9);
        assert.equal(offsetAt(text, { line: 7, character: 0 }), 9);
    });

    test('several edits apply against the original text, in any order', () => {
        const text = 'one\ntwo\nthree\n';
        const edits = [
            { range: { start: { line: 2, character: 0 }, end: { line: 2, character: 5 } }, newText: 'THREE' },
            { range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }, newText: '' },
            { range: { start: { line: 1, character: 3 }, end: { line: 1, character: 3 } }, newText: '!' },
        ];
        assert.equal(applyTextEdits(text, edits), 'two!\nTHREE\n');
        const span = (from: number, to: number) => ({
            range: { start: { line: 0, character: from }, end: { line: 0, character: to } },
            newText: 'x',
        });
        assert.throws(() => applyTextEdits('abc', [span(0, 2), span(1, 3)]), /overlapping/);
    });

    test('a whole-document edit, as the server sends it', () => {
        for (const text of ['', 'x', 'a\nb', 'a\r\nb\r\n', 'é🙂\n🙂']) {
            assert.equal(applyTextEdits(text, [{ range: wholeRange(text), newText: 'new' }]), 'new');
        }
    });

    test('MemoryEditor applies workspace edits to open buffers and syncs them', () => {
        const fake = fakeEndpoint();
        const editor = new MemoryEditor(fake.endpoint);
        editor.open('file:///a.py', 'x = 1\n', 'python');
        const answer = fake.request('workspace/applyEdit', {
            label: 'agent-host: write a.py',
            edit: { changes: { 'file:///a.py': [{ range: wholeRange('x = 1\n'), newText: 'x = 2\n' }] } },
        });
        assert.deepEqual(answer, { applied: true });
        assert.equal(editor.text('file:///a.py'), 'x = 2\n');
        assert.equal(editor.version('file:///a.py'), 2);
        assert.deepEqual(
            fake.sent.map((s) => s.method),
            ['textDocument/didOpen', 'textDocument/didChange'],
        );
        assert.deepEqual(fake.sent[1].params, {
            textDocument: { uri: 'file:///a.py', version: 2 },
            contentChanges: [{ text: 'x = 2\n' }],
        });
        // a versioned edit for an older version, an unopened file, a resource operation: refused whole
        const stale = {
            edit: { documentChanges: [{ textDocument: { uri: 'file:///a.py', version: 1 }, edits: [] }] },
        };
        assert.equal((fake.request('workspace/applyEdit', stale) as { applied: boolean }).applied, false);
        const closed = { edit: { changes: { 'file:///b.py': [] } } };
        assert.equal((fake.request('workspace/applyEdit', closed) as { applied: boolean }).applied, false);
        const create = { edit: { documentChanges: [{ kind: 'create', uri: 'file:///c.py' }] } };
        assert.equal((fake.request('workspace/applyEdit', create) as { applied: boolean }).applied, false);
        assert.equal(editor.text('file:///a.py'), 'x = 2\n');
        editor.close('file:///a.py');
        assert.equal(editor.text('file:///a.py'), undefined);
    });
});

describe('proposed content for the diff view', () => {
    test("pyReplace is Python's str.replace", () => {
        assert.equal(pyReplace('a-a-a', 'a', 'b', 1), 'b-a-a');
        assert.equal(pyReplace('a-a-a', 'a', 'b'), 'b-b-b');
        assert.equal(pyReplace('cost', 'cost', '$&$1'), '$&$1', 'no $ patterns');
        assert.equal(pyReplace('abc', '', 'X', 1), 'Xabc');
        assert.equal(pyReplace('abc', '', 'X'), 'XaXbXcX');
        assert.equal(pyReplace('abc', 'z', 'X'), 'abc');
    });

    test('each edit tool', () => {
        assert.equal(proposedContent('write_file', { path: 'a', content: 'new' }, 'old'), 'new');
        assert.equal(proposedContent('write_file', { path: 'a', content: 'new' }, undefined), 'new');
        assert.equal(proposedContent('edit_file', { path: 'a', old_string: 'o', new_string: '0' }, 'foo'), 'f0o');
        assert.equal(
            proposedContent('edit_file', { path: 'a', old_string: 'o', new_string: '0', replace_all: true }, 'foo'),
            'f00',
        );
        assert.equal(proposedContent('delete_file', { path: 'a' }, 'foo'), '');
        assert.equal(proposedContent('run_command', { command: 'ls' }, undefined), undefined);
        assert.equal(proposedContent('write_file', { path: 'a' }, 'old'), undefined);
    });
});

describe('server command', () => {
    const onPath = (dirs: string[]) => (file: string) => dirs.some((d) => file === `${d}/agent-host`);

    test('agent-host on PATH, else python3 -m agent_host', () => {
        assert.deepEqual(
            resolveServerCommand({ envPath: '/usr/bin:/opt/bin', platform: 'linux', isExecutable: onPath(['/opt/bin']) }),
            { command: '/opt/bin/agent-host', args: ['serve'] },
        );
        assert.deepEqual(resolveServerCommand({ envPath: '/usr/bin', platform: 'linux', isExecutable: () => false }), {
            command: 'python3',
            args: ['-m', 'agent_host', 'serve'],
        });
        assert.deepEqual(resolveServerCommand({ envPath: 'C:\\bin', platform: 'win32', isExecutable: () => false }), {
            command: 'python',
            args: ['-m', 'agent_host', 'serve'],
        });
    });

    test('serverPath: an executable, or a Python interpreter', () => {
        const none = { isExecutable: () => false, platform: 'linux' as const };
        assert.deepEqual(resolveServerCommand({ ...none, serverPath: '/venv/bin/agent-host' }), {
            command: '/venv/bin/agent-host',
            args: ['serve'],
        });
        for (const python of ['/venv/bin/python', 'python3', '/usr/bin/python3.12']) {
            assert.deepEqual(resolveServerCommand({ ...none, serverPath: python }), {
                command: python,
                args: ['-m', 'agent_host', 'serve'],
            });
        }
        assert.deepEqual(resolveServerCommand({ serverPath: 'C:\\venv\\Scripts\\python.exe', platform: 'win32' }).args, [
            '-m',
            'agent_host',
            'serve',
        ]);
        assert.deepEqual(resolveServerCommand({ ...none, serverPath: '  ' }).command, 'python3');
    });

    test('a leading ~ in serverPath and store is the home folder', () => {
        const home = os.homedir();
        const none = { isExecutable: () => false, platform: 'linux' as const };
        assert.deepEqual(resolveServerCommand({ ...none, serverPath: '~/.venvs/agent-host/bin/agent-host' }), {
            command: path.join(home, '.venvs/agent-host/bin/agent-host'),
            args: ['serve'],
        });
        assert.deepEqual(resolveServerCommand({ ...none, serverPath: ' ~/venv/bin/python3 ' }), {
            command: path.join(home, 'venv/bin/python3'),
            args: ['-m', 'agent_host', 'serve'],
        });
        assert.deepEqual(initializationOptions({ store: '~/sessions' }), { store: path.join(home, 'sessions') });
        assert.deepEqual(initializationOptions({ store: 'sqlite:///x.db' }), { store: 'sqlite:///x.db' });
        assert.equal(expandHome('~', '/h'), '/h');
        assert.equal(expandHome('~other/x', '/h'), '~other/x');
        assert.equal(expandHome('/a/~/b', '/h'), '/a/~/b');
    });

    test('initializationOptions leave empty settings to the server', () => {
        assert.deepEqual(initializationOptions({ store: '', model: ' ', approval: 'ask' }), { approval: 'ask' });
        assert.deepEqual(initializationOptions({ store: '/s', model: 'scripted:/x.json', approval: 'nonsense' }), {
            store: '/s',
            model: 'scripted:/x.json',
        });
    });
});

describe('AgentApi', () => {
    test('events fan out to every listener, a failing one does not stop the others', () => {
        const fake = fakeEndpoint();
        const api = new AgentApi(fake.endpoint);
        const seen: string[] = [];
        const original = console.error;
        console.error = () => undefined;
        try {
            api.onEvent(() => {
                throw new Error('boom');
            });
            const sub = api.onEvent((e) => seen.push(e.kind));
            fake.notify('session/event', { sessionId: 's', kind: 'text_delta', data: { text: 'x' } });
            sub.dispose();
            fake.notify('session/event', { sessionId: 's', kind: 'turn_end', data: {} });
        } finally {
            console.error = original;
        }
        assert.deepEqual(seen, ['text_delta']);
    });

    test('permission: no handler, a throwing handler or an answer not offered all reject once', async () => {
        const fake = fakeEndpoint();
        const api = new AgentApi(fake.endpoint);
        const params: PermissionParams = {
            sessionId: 's',
            tool: 'write_file',
            kind: 'edit',
            arguments: { path: 'a' },
            options: ['allow_once', 'reject_once'],
        };
        assert.deepEqual(await fake.request('session/requestPermission', params), { outcome: 'reject_once' });
        api.setPermissionHandler(() => 'allow_always');
        assert.deepEqual(await fake.request('session/requestPermission', params), { outcome: 'reject_once' });
        const original = console.error;
        console.error = () => undefined;
        api.setPermissionHandler(() => {
            throw new Error('no UI');
        });
        assert.deepEqual(await fake.request('session/requestPermission', params), { outcome: 'reject_once' });
        console.error = original;
        api.setPermissionHandler(async () => 'allow_once' as const);
        assert.deepEqual(await fake.request('session/requestPermission', params), { outcome: 'allow_once' });
    });

    test('error responses become AgentError; requests carry camelCase params', async () => {
        const fake = fakeEndpoint();
        const api = new AgentApi(fake.endpoint);
        fake.setReply(() => {
            throw Object.assign(new Error('a turn is running'), { code: -32006, data: { error: 'TurnInProgress' } });
        });
        await assert.rejects(api.restore({ sessionId: 's', seq: 2, files: false }), (err: unknown) => {
            assert.ok(err instanceof AgentError);
            assert.equal(err.codeName, 'TURN_IN_PROGRESS');
            assert.equal(err.serverError, 'TurnInProgress');
            return true;
        });
        assert.deepEqual(fake.sent[0], { method: 'session/restore', params: { sessionId: 's', seq: 2, files: false } });
        await api.cancel('s');
        assert.deepEqual(fake.sent[1], { method: 'session/cancel', params: { sessionId: 's' } });
        assert.equal(errorName(-32007), 'MODEL_ERROR');
        assert.equal(errorName(1), undefined);
    });

    test('cancelTurn repeats session/cancel until the turn answers', async () => {
        const fake = fakeEndpoint();
        const api = new AgentApi(fake.endpoint);
        let finish: (v: string) => void = () => undefined;
        const turn = new Promise<string>((resolve) => (finish = resolve));
        const cancelling = api.cancelTurn('s', turn, 5);
        await new Promise((r) => setTimeout(r, 30));
        finish('done');
        assert.equal(await cancelling, 'done');
        const cancels = fake.sent.filter((s) => s.method === 'session/cancel').length;
        assert.ok(cancels >= 2, `${cancels} cancels`);
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(fake.sent.filter((s) => s.method === 'session/cancel').length, cancels, 'and stops then');
    });

    test('listAll follows nextCursor, with the workspace on every page', async () => {
        const fake = fakeEndpoint();
        const api = new AgentApi(fake.endpoint);
        const summary = (id: string) => ({ sessionId: id, title: id, createdAt: '', updatedAt: '', turns: 0, head: 1, workspace: '/p' });
        fake.setReply((_m, params) => {
            const cursor = (params as { cursor: string | null }).cursor;
            return cursor === null
                ? { sessions: [summary('a')], nextCursor: '1' }
                : { sessions: [summary('b')], nextCursor: null };
        });
        assert.deepEqual(
            (await api.listAll(1)).map((s) => s.sessionId),
            ['a', 'b'],
        );
        assert.deepEqual(fake.sent.map((s) => s.params), [
            { limit: 1, cursor: null },
            { limit: 1, cursor: '1' },
        ]);
        fake.sent.length = 0;
        await api.listAll(1, 'file:///p');
        assert.deepEqual(fake.sent, [
            { method: 'session/list', params: { limit: 1, cursor: null, workspace: 'file:///p' } },
            { method: 'session/list', params: { limit: 1, cursor: '1', workspace: 'file:///p' } },
        ]);
    });
});

describe('Transcript', () => {
    const ev = (kind: string, data: Record<string, unknown>, sessionId = 's'): SessionEvent => ({ sessionId, kind, data });

    test('folds a turn: deltas stream into one entry that the logged message settles', () => {
        const t = new Transcript('s');
        t.apply(ev('user_prompt', { seq: 2, text: 'hi' }));
        assert.equal(t.state.running, true);
        t.apply(ev('text_delta', { text: 'Hel' }));
        t.apply(ev('text_delta', { text: 'lo' }));
        assert.deepEqual(t.entries[1], { role: 'assistant', text: 'Hello', streaming: true });
        t.apply(ev('assistant_message', { seq: 3, text: 'Hello.' }));
        assert.deepEqual(t.entries[1], { role: 'assistant', text: 'Hello.', streaming: false, seq: 3 });
        t.apply(ev('tool_call', { seq: 4, callId: 'c1', name: 'read_file', arguments: { path: 'a' } }));
        t.apply(ev('usage', { seq: 5, inputTokens: 10, outputTokens: 2, cost: 0.5 }));
        t.apply(ev('file_snapshot', { seq: 6, path: 'a', before: null, after: 'h' }));
        t.apply(ev('file_snapshot', { seq: 7, path: 'b', before: 'h', after: null }));
        t.apply(ev('file_snapshot', { seq: 8, path: 'c', before: 'h', after: 'i', jump: true }));
        t.apply(ev('tool_result', { seq: 9, callId: 'c1', output: 'text', isError: false }));
        assert.equal(t.apply(ev('text_delta', { text: 'other' }, 'other-session')), false);
        assert.equal(t.apply(ev('future_kind', {})), false);
        t.apply(ev('turn_end', { seq: 10, stopReason: 'cancelled' }));
        assert.equal(t.state.running, false);
        assert.deepEqual(
            t.entries.map((e) => (e.role === 'file' ? `${e.change} ${e.path}` : e.role)),
            ['user', 'assistant', 'tool', 'created a', 'deleted b', 'review', 'info'],
        );
        assert.equal((t.entries[2] as { output?: string }).output, 'text');
        assert.deepEqual([t.state.inputTokens, t.state.outputTokens, t.state.cost], [10, 2, 0.5]);
    });

    test('from history: tool calls pair with their results; a summary is a note', () => {
        const t = Transcript.fromHistory('s', [
            { role: 'user', content: 'Summary of the conversation so far:\nthings' },
            { role: 'user', content: 'go' },
            {
                role: 'assistant',
                content: null,
                tool_calls: [{ id: 'c', type: 'function', function: { name: 'grep', arguments: '{"pattern":"x"}' } }],
            },
            { role: 'tool', tool_call_id: 'c', content: 'a.py:1:x' },
            { role: 'assistant', content: 'Found it.' },
        ]);
        assert.deepEqual(
            t.entries.map((e) => e.role),
            ['info', 'user', 'tool', 'assistant'],
        );
        assert.equal(t.state.costKnown, false);
        const markdown = toMarkdown('T', t.entries);
        assert.match(markdown, /\*\*Tool\*\* `grep x`\n\n```\na\.py:1:x\n```/);
        assert.equal(formatCost(undefined), '$—');
        assert.equal(formatCost(0.01234), '$0.0123');
        assert.equal(formatCost(12.5), '$12.50');
    });

    test('from history with checkpoints: the files each turn changed; refused and cancelled calls are errors', () => {
        const call = (id: string, name: string, args: Record<string, unknown>) => ({
            role: 'assistant',
            content: null,
            tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
        });
        const t = Transcript.fromHistory(
            's',
            [
                { role: 'user', content: 'make b' },
                call('c1', 'write_file', { path: 'b.py', content: 'x' }),
                { role: 'tool', tool_call_id: 'c1', content: 'Created b.py (1 bytes, 1 lines).' },
                call('c2', 'edit_file', { path: 'a.py' }),
                { role: 'tool', tool_call_id: 'c2', content: 'Edited a.py.' },
                { role: 'assistant', content: 'Done.' },
                { role: 'user', content: 'change a' },
                call('c3', 'edit_file', { path: 'a.py' }),
                { role: 'tool', tool_call_id: 'c3', content: "Permission denied: the user did not allow edit_file (approval policy 'ask')." },
                call('c4', 'run_command', { command: 'sleep 9' }),
                { role: 'tool', tool_call_id: 'c4', content: '[cancelled by the user before it finished]' },
                call('c5', 'run_command', { command: 'false' }),
                { role: 'tool', tool_call_id: 'c5', content: '(no output)\n\n[exit code 1]' },
                call('c6', 'run_command', { command: 'true' }),
                { role: 'tool', tool_call_id: 'c6', content: '(no output)\n\n[exit code 0]' },
                call('c7', 'read_file', { path: 'z' }),
                { role: 'tool', tool_call_id: 'c7', content: 'read_file: No such file or directory: z' },
            ],
            [
                { seq: 1, prompt: 'make b', createdAt: '', files: ['b.py', 'a.py'] },
                { seq: 9, prompt: 'change a', createdAt: '', files: [] },
            ],
        );
        assert.deepEqual(
            t.entries.map((e) => (e.role === 'file' ? `${e.change}: ${e.path}` : e.role === 'tool' ? `${e.name}${e.isError ? ' !' : ''}` : e.role)),
            [
                'user', 'write_file', 'edit_file', 'assistant', 'created: b.py', 'modified: a.py', 'review',
                'user', 'edit_file !', 'run_command !', 'run_command !', 'run_command', 'read_file !',
            ],
        );
        assert.match(toMarkdown('T', t.entries), /\*\*Tool\*\* `edit_file a\.py` \(error\)/);
        assert.match(toMarkdown('T', t.entries), /\*created: b\.py\*/);
    });

    test('a null cost (the server has no price for the model) is unknown, never $0', () => {
        const t = new Transcript('s');
        t.apply(ev('usage', { seq: 2, inputTokens: 10, outputTokens: 2, cost: 0.5 }));
        t.apply(ev('usage', { seq: 3, inputTokens: 10, outputTokens: 2, cost: null }));
        assert.equal(t.state.cost, null);
        // a later known part does not make the sum known again
        t.apply(ev('usage', { seq: 4, inputTokens: 10, outputTokens: 2, cost: 0.25 }));
        assert.equal(t.state.cost, null);
        assert.equal(t.state.inputTokens, 30);
        assert.equal(formatCost(t.state.cost), '$—');
        const result = {
            sessionId: 's',
            checkpoint: 1,
            stopReason: 'end_turn' as const,
            text: '',
            usage: { inputTokens: 30, outputTokens: 6 },
            cost: null,
            totalCost: null,
        };
        t.applyResult(result);
        assert.deepEqual([t.state.cost, t.state.costKnown], [null, true]);
        assert.equal(formatCost(null), '$—');
        t.applyResult({ ...result, cost: 0.1, totalCost: 0.75 });
        assert.equal(t.state.cost, 0.75);
    });
});

describe('restore texts', () => {
    const checkpoint = { seq: 2, prompt: 'p', createdAt: '2026-01-01T00:00:00Z' };

    test('the checkpoint detail sets apart what commands changed and what was not captured', () => {
        assert.equal(checkpointDetail({ ...checkpoint, files: [] }), 'no files changed');
        assert.equal(checkpointDetail({ ...checkpoint, files: ['a.py', 'b.py'] }), 'changed: a.py, b.py');
        assert.equal(
            checkpointDetail({ ...checkpoint, files: ['a.py', 'gen.txt', 'b.py'], fromCommands: ['gen.txt'] }),
            'changed: a.py, b.py · by commands: gen.txt',
        );
        assert.equal(
            checkpointDetail({ ...checkpoint, files: ['gen.txt'], fromCommands: ['gen.txt'], notCaptured: ['node_modules/x.js'] }),
            'changed by commands: gen.txt · not captured (a restore leaves them): node_modules/x.js',
        );
        assert.equal(
            checkpointDetail({ ...checkpoint, files: [], notCaptured: ['big.bin'] }),
            'no files changed · not captured (a restore leaves them): big.bin',
        );
        // Before the sandbox, servers sent no `unconfined`: every MCP tool may have reached outside.
        assert.equal(
            checkpointDetail({ ...checkpoint, files: ['out.txt'], fromCommands: ['out.txt'], externalTools: ['mcp__fs__write_file'] }),
            'changed by commands: out.txt · used MCP tools: mcp__fs__write_file · ran without the sandbox (what it did outside the workspace stays): mcp__fs__write_file',
        );
        // Everything confined: no warning of outside changes.
        assert.equal(
            checkpointDetail({ ...checkpoint, files: ['out.txt'], fromCommands: ['out.txt'], externalTools: ['mcp__fs__write_file'], unconfined: [] }),
            'changed by commands: out.txt · used MCP tools: mcp__fs__write_file',
        );
        assert.equal(
            checkpointDetail({ ...checkpoint, files: ['out.txt'], fromCommands: ['out.txt'], unconfined: ['make install'] }),
            'changed by commands: out.txt · ran without the sandbox (what it did outside the workspace stays): make install',
        );
    });

    test('a restore warns of outside changes only past what ran without the sandbox', () => {
        assert.equal(outsideChangesText([]), '');
        assert.equal(
            outsideChangesText(['make install', 'mcp__fs__write_file']),
            'ran without the sandbox: make install, mcp__fs__write_file; what they changed outside the workspace was not undone',
        );
    });

    test('conflicts and not-captured paths are counted and named', () => {
        assert.equal(conflictsText(['a.py']), '1 file changed since the agent last wrote it and was left as it is: a.py');
        assert.equal(
            conflictsText(['a.py', 'b.py']),
            '2 files changed since the agent last wrote them and were left as they are: a.py, b.py',
        );
        assert.equal(conflictsText(['b.py'], 'the restore wrote'), '1 file changed since the restore wrote it and was left as it is: b.py');
        assert.equal(
            notCapturedText(['node_modules/x.js', 'big.bin']),
            '2 paths changed through commands but were not captured (ignored, or over the size cap), so they were not restored: node_modules/x.js, big.bin',
        );
        assert.match(notCapturedText(['big.bin']), /^1 path changed through commands but was not captured .*: big\.bin$/);
        const many = Array.from({ length: 12 }, (_, i) => `f${i}`);
        assert.equal(listPaths(many), 'f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, … and 2 more');
        assert.match(conflictsText(many), /^12 files changed .*: f0, .*f9, … and 2 more$/);
    });
});
