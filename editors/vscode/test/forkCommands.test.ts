/**
 * Fork Session… and Close Session in the bundled extension (on the stand-in
 * `vscode` module, against the real server): a fork from a checkpoint or of the
 * whole conversation becomes the current session with its chat; after a close
 * the chat starts afresh and the closed session still takes prompts.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { AgentApi } from '../src/protocol/api';
import type { ChatMessage } from '../src/protocol/types';
import { context, loadBundle, type Loaded } from './bundle';
import { createFakeVscode, fakeWebviewView, type FakeUi } from './fakeVscode';
import { PYTHON, waitFor } from './helpers';

function said(messages: ChatMessage[]): [string, unknown][] {
    return messages.map((m) => [m.role, m.content]);
}

let dir: string;
let ui: FakeUi;
let extension: Loaded;
let api: AgentApi;
let view: ReturnType<typeof fakeWebviewView>;

before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-host-vscode-fork-'));
    const root = path.join(dir, 'project');
    fs.mkdirSync(root);
    const script = path.join(dir, 'script.json');
    fs.writeFileSync(
        script,
        JSON.stringify({
            // the scripted model plays the step numbered by the assistant messages already
            // in the session: a fork with one of them answers with step 1
            steps: [
                { text: 'Answer 1.' },
                { text: 'Answer 2.' },
                { text: 'Answer 3.' },
            ],
        }),
    );
    const fake = createFakeVscode(root);
    ui = fake.ui;
    ui.config = {
        'agentHost.serverPath': PYTHON,
        'agentHost.model': `scripted:${script}`,
        'agentHost.store': path.join(dir, 'store'),
        'agentHost.approval': 'auto',
    };
    extension = loadBundle(fake.vscode);
    const controller = extension.activate(context()) as { server: { ensureStarted(): Promise<AgentApi> } };
    view = fakeWebviewView();
    ui.viewProviders.get('agentHost.chat').resolveWebviewView(view.view);
    view.send({ type: 'ready' });
    api = await controller.server.ensureStarted();
});

after(async () => {
    await extension?.deactivate();
    fs.rmSync(dir, { recursive: true, force: true });
});

function lastRender(): { sessionId?: string; title: string; entries: { role: string; text?: string }[]; running: boolean } {
    const renders = view.posted.filter((m) => m.type === 'render');
    assert.ok(renders.length, 'the chat view was rendered');
    return renders[renders.length - 1].state;
}

const errors = () => ui.messages.filter((m) => m.level === 'error').map((m) => m.message);

/** The chat view's state once `check` holds (renders are coalesced). */
function rendered(check: (s: ReturnType<typeof lastRender>) => boolean, what: string) {
    return waitFor(() => (check(lastRender()) ? lastRender() : undefined), what);
}

function forkedId(): string {
    const message = ui.messages[ui.messages.length - 1].message;
    const id = /^Agent Host: Forked into (\S+)\.$/.exec(message)?.[1];
    assert.ok(id, message);
    return id;
}

let source: string;

test('Fork Session… from a checkpoint: the fork is current and its chat is the conversation before it', async () => {
    await ui.commands.get('agentHost.sendPrompt')!('First question');
    await ui.commands.get('agentHost.sendPrompt')!('Second question');
    source = (await rendered((s) => s.entries.length === 4 && !s.running, 'the two turns')).sessionId!;
    assert.ok(source);

    let labels: string[] = [];
    ui.picks.push((items) => {
        labels = items.map((i: { label: string }) => i.label);
        return items[1]; // the newest checkpoint: "Second question"
    });
    await ui.commands.get('agentHost.forkSession')!();
    assert.deepEqual(errors(), []);
    assert.equal(labels.length, 3);
    assert.equal(labels[0], '$(list-flat) Whole conversation');
    assert.equal(labels[1], '2 · Second question');
    assert.equal(labels[2], '1 · First question');

    const forked = forkedId();
    assert.notEqual(forked, source);
    const state = await rendered((s) => s.sessionId === forked, 'the fork in the chat');
    assert.equal(state.title, 'fork of First question');
    assert.deepEqual(
        state.entries.map((e) => [e.role, e.text]),
        [
            ['user', 'First question'],
            ['assistant', 'Answer 1.'],
        ],
    );
    assert.deepEqual(said((await api.history({ sessionId: forked })).messages), [
        ['user', 'First question'],
        ['assistant', 'Answer 1.'],
    ]);
    assert.equal((await api.history({ sessionId: source })).messages.length, 4, 'the source is untouched');

    // the next prompt goes to the fork
    await ui.commands.get('agentHost.sendPrompt')!('A question in the fork');
    assert.deepEqual(said((await api.history({ sessionId: forked })).messages).slice(2), [
        ['user', 'A question in the fork'],
        ['assistant', 'Answer 2.'],
    ]);
    assert.equal((await api.history({ sessionId: source })).messages.length, 4);
});

test('Fork Session… with "Whole conversation" forks all of it', async () => {
    const current = lastRender().sessionId!;
    ui.picks.push((items) => items[0]);
    await ui.commands.get('agentHost.forkSession')!();
    assert.deepEqual(errors(), []);
    const forked = forkedId();
    assert.notEqual(forked, current);
    const state = await rendered((s) => s.sessionId === forked, 'the whole fork in the chat');
    assert.deepEqual(
        state.entries.map((e) => e.text),
        ['First question', 'Answer 1.', 'A question in the fork', 'Answer 2.'],
    );
    assert.equal(state.title, 'fork of fork of First question');

    // dismissing the picker forks nothing
    const count = ui.messages.length;
    ui.picks.push(() => undefined);
    await ui.commands.get('agentHost.forkSession')!();
    assert.equal(ui.messages.length, count);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(lastRender().sessionId, forked);
});

test('Close Session: the chat starts afresh, the next prompt starts a new session, the closed one still takes prompts', async () => {
    const closed = lastRender().sessionId!;
    await ui.commands.get('agentHost.closeSession')!();
    assert.deepEqual(errors(), []);
    assert.match(ui.messages[ui.messages.length - 1].message, /^Agent Host: closed fork of fork of First question; it stays stored/);
    const fresh = await rendered((s) => s.sessionId === undefined, 'the chat without a session');
    assert.equal(fresh.title, 'No session');
    assert.deepEqual(fresh.entries, []);

    await ui.commands.get('agentHost.sendPrompt')!('Hello again');
    const after = await rendered((s) => Boolean(s.sessionId) && !s.running && s.entries.length === 2, 'the new session in the chat');
    assert.notEqual(after.sessionId, closed);
    assert.equal(after.entries[1].text, 'Answer 1.');

    // the closed session is stored and goes on when sent to (its third turn)
    const more = await api.send({ sessionId: closed, prompt: 'Still there?' });
    assert.equal(more.stopReason, 'end_turn');
    assert.equal(more.text, 'Answer 3.');
    assert.equal((await api.history({ sessionId: closed })).messages.length, 6);
    assert.deepEqual(errors(), []);

    // with no current session there is nothing to close
    await ui.commands.get('agentHost.closeSession')!(); // the new one
    await ui.commands.get('agentHost.closeSession')!();
    assert.equal(ui.messages[ui.messages.length - 1].message, 'Agent Host: no current session to close.');

    // a session is stored from its first prompt: one closed before it is said to be gone
    ui.inputs.push('Never prompted');
    await ui.commands.get('agentHost.newSession')!();
    const unprompted = (await rendered((s) => s.title === 'Never prompted', 'the new session')).sessionId!;
    await ui.commands.get('agentHost.closeSession')!();
    assert.equal(
        ui.messages[ui.messages.length - 1].message,
        'Agent Host: closed Never prompted; it had no prompt, so nothing of it was stored. The next prompt starts a new session.',
    );
    assert.ok(!(await api.listAll()).some((s) => s.sessionId === unprompted));
    assert.deepEqual(errors(), []);
});
