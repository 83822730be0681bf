/** session/requestPermission under approval "ask", answered by the client. */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { proposedContent } from '../src/protocol/proposal';
import type { Decision, PermissionParams } from '../src/protocol/types';
import { serve } from './helpers';

const OLD = 'print("old")\n';
const NEW = 'print("new")\n';

const write = { name: 'write_file', arguments: { path: 'a.py', content: NEW } };

test('reject_once leaves the file untouched; allow_once writes it', async () => {
    const f = await serve({
        approval: 'ask',
        files: { 'a.py': OLD },
        steps: [
            { text: 'Writing a.py.', tool_calls: [write] },
            { text: 'You said no.' },
            { text: 'Writing a.py again.', tool_calls: [write] },
            { text: 'Written.' },
        ],
    });
    try {
        const { api } = f.client;
        const asked: PermissionParams[] = [];
        let answer: Decision = 'reject_once';
        api.setPermissionHandler((params) => {
            asked.push(params);
            // the file is not touched while the question is open
            assert.equal(f.read('a.py'), OLD);
            return answer;
        });
        const { sessionId } = await api.newSession();

        const rejected = await api.send({ sessionId, prompt: 'Make it new' });
        assert.equal(rejected.stopReason, 'end_turn');
        assert.equal(f.read('a.py'), OLD);
        assert.equal(asked.length, 1);
        const params = asked[0];
        assert.equal(params.sessionId, sessionId);
        assert.equal(params.tool, 'write_file');
        assert.equal(params.kind, 'edit');
        assert.deepEqual(params.arguments, { path: 'a.py', content: NEW });
        assert.deepEqual(params.options, ['allow_once', 'allow_always', 'reject_once', 'reject_always']);
        assert.equal(
            params.diff,
            '--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-print("old")\n+print("new")\n',
        );
        // what the diff editor shows on the right
        assert.equal(proposedContent(params.tool, params.arguments, f.read('a.py')), NEW);
        let events = f.events.filter((e) => e.sessionId === sessionId);
        assert.ok(!events.some((e) => e.kind === 'file_snapshot'), 'no snapshot for a refused edit');
        const refused = events.find((e) => e.kind === 'tool_result')!.data as { output: string; isError: boolean };
        assert.equal(refused.isError, true);
        assert.match(refused.output, /not allow|denied|reject/i);

        answer = 'allow_once';
        f.events.length = 0;
        const allowed = await api.send({ sessionId, prompt: 'Please, really' });
        assert.equal(allowed.stopReason, 'end_turn');
        assert.equal(asked.length, 2);
        assert.equal(f.read('a.py'), NEW);
        events = f.events.filter((e) => e.sessionId === sessionId);
        const kinds = events.map((e) => e.kind);
        assert.ok(kinds.indexOf('file_snapshot') > kinds.indexOf('tool_call'));
        assert.equal((events.find((e) => e.kind === 'tool_result')!.data as { isError: boolean }).isError, false);
    } finally {
        await f.close();
    }
});

test('allow_always is remembered for the tool; an answer not offered counts as reject_once', async () => {
    const f = await serve({
        approval: 'ask',
        steps: [
            { text: '', tool_calls: [{ name: 'write_file', arguments: { path: 'b.txt', content: 'b\n' } }] },
            { text: '', tool_calls: [{ name: 'write_file', arguments: { path: 'c.txt', content: 'c\n' } }] },
            { text: 'Two files.' },
            { text: '', tool_calls: [{ name: 'run_command', arguments: { command: 'touch ran.txt' } }] },
            { text: 'No command.' },
        ],
    });
    try {
        const { api } = f.client;
        const asked: PermissionParams[] = [];
        api.setPermissionHandler((params) => {
            asked.push(params);
            if (params.kind === 'command') {
                return 'maybe' as Decision; // not an option: the client must send reject_once
            }
            return 'allow_always';
        });
        const { sessionId } = await api.newSession();
        await api.send({ sessionId, prompt: 'Write b and c' });
        assert.equal(f.read('b.txt'), 'b\n');
        assert.equal(f.read('c.txt'), 'c\n');
        assert.deepEqual(
            asked.map((p) => p.arguments.path),
            ['b.txt'],
            'asked once for write_file',
        );

        await api.send({ sessionId, prompt: 'Touch ran.txt' });
        assert.equal(asked.length, 2);
        assert.equal(asked[1].kind, 'command');
        assert.equal(asked[1].tool, 'run_command');
        assert.equal(asked[1].arguments.command, 'touch ran.txt');
        assert.equal(f.read('ran.txt'), undefined, 'the command did not run');
    } finally {
        await f.close();
    }
});

test('a command the sandbox stopped is asked about with its reason; allowed, it runs unconfined', async () => {
    const outside = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-host-vscode-out-')), 'escaped.txt');
    const f = await serve({
        approval: 'auto',
        steps: [
            { text: '', tool_calls: [{ name: 'run_command', arguments: { command: `echo out > ${outside}` } }] },
            { text: 'Written outside.' },
        ],
    });
    try {
        const { api } = f.client;
        const asked: PermissionParams[] = [];
        api.setPermissionHandler((params) => {
            asked.push(params);
            return 'allow_once';
        });
        const { sessionId } = await api.newSession();
        await api.send({ sessionId, prompt: 'Write outside the project' });
        assert.equal(asked.length, 1); // auto asks nothing else: only the way out of the sandbox
        assert.equal(asked[0].kind, 'command');
        assert.match(asked[0].sandboxDenial ?? '', /wrote where the sandbox lets no command write/);
        assert.equal(fs.readFileSync(outside, 'utf8'), 'out\n');
        const result = f.events.find((e) => e.kind === 'tool_result')!.data as { output: string };
        assert.match(result.output, /the user approved running it without the sandbox/);
    } finally {
        await f.close();
    }
});
