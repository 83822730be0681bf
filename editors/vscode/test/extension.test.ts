/**
 * The bundled extension (dist/extension.js, what the .vsix ships) activated on a
 * fake `vscode` module, its commands driven against the real server: send with a
 * permission prompt and its diff, the chat view and status bar, checkpoints,
 * restore, undo, history, compact, sessions, cancel.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { BUNDLE, HERE, context, loadBundle, type Loaded } from './bundle';
import { createFakeVscode, fakeWebviewView, type FakeUi } from './fakeVscode';
import { PYTHON, serve, waitFor } from './helpers';

const manifest = JSON.parse(fs.readFileSync(path.join(HERE, 'package.json'), 'utf8'));

test('the bundle requires nothing but vscode and Node built-ins', () => {
    const text = fs.readFileSync(BUNDLE, 'utf8');
    const required = new Set([...text.matchAll(/require\(["']([^"']+)["']\)/g)].map((m) => m[1]));
    const builtins = new Set(Module.builtinModules);
    const foreign = [...required].filter((r) => r !== 'vscode' && !builtins.has(r.replace(/^node:/, '')));
    assert.deepEqual(foreign, []);
    assert.ok(required.has('vscode'));
});

let dir: string;
let root: string;
let ui: FakeUi;
let extension: Loaded;
let view: ReturnType<typeof fakeWebviewView>;

before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-host-vscode-ext-'));
    root = path.join(dir, 'project');
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, 'a.py'), 'print("old")\n');
    const script = path.join(dir, 'script.json');
    fs.writeFileSync(
        script,
        JSON.stringify({
            steps: [
                {
                    text: 'Updating a.py.',
                    tool_calls: [
                        {
                            name: 'edit_file',
                            arguments: { path: 'a.py', old_string: 'print("old")', new_string: 'print("new")' },
                        },
                    ],
                },
                { text: 'a.py now prints new.' },
                { text: 'A second, slow answer that will be cancelled long before it ends, one word at a time.', delay_ms: 300 },
            ],
        }),
    );
    const fake = createFakeVscode(root);
    ui = fake.ui;
    ui.config = {
        'agentHost.serverPath': PYTHON,
        'agentHost.model': `scripted:${script}`,
        'agentHost.store': path.join(dir, 'store'),
        'agentHost.approval': 'ask',
    };
    extension = loadBundle(fake.vscode);
});

after(async () => {
    await extension?.deactivate();
    fs.rmSync(dir, { recursive: true, force: true });
});

function lastRender(): { title: string; entries: { role: string; text?: string }[]; running: boolean; cost: string } {
    const renders = view.posted.filter((m) => m.type === 'render');
    assert.ok(renders.length, 'the chat view was rendered');
    return renders[renders.length - 1].state;
}

test('activate registers every contributed command and the chat view, and starts no server', () => {
    extension.activate(context());
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual([...ui.commands.keys()].sort(), contributed);
    assert.ok(ui.viewProviders.has('agentHost.chat'));
    assert.deepEqual(manifest.contributes.views.agentHost.map((v: { id: string }) => v.id), ['agentHost.chat']);
    assert.ok(!ui.output.some((l) => l.includes('starting')), 'the server starts on first use');
    view = fakeWebviewView();
    ui.viewProviders.get('agentHost.chat').resolveWebviewView(view.view);
    assert.match(view.view.webview.html, /Content-Security-Policy/);
    view.send({ type: 'ready' });
});

test('Send Prompt runs a turn; the edit is shown as a diff and allowed in a modal', async () => {
    const modals: { message: string; detail: string; items: string[] }[] = [];
    ui.answer = (message, items) => {
        const m = ui.messages[ui.messages.length - 1];
        if ((m.options as { modal?: boolean } | undefined)?.modal) {
            modals.push({ message, detail: (m.options as { detail: string }).detail, items: items.map((i) => i.title) });
            return items.find((i) => i.title === 'Allow');
        }
        return undefined;
    };
    ui.inputs.push('Make a.py print new');
    await ui.commands.get('agentHost.sendPrompt')!();

    assert.equal(fs.readFileSync(path.join(root, 'a.py'), 'utf8'), 'print("new")\n');
    assert.equal(modals.length, 1);
    assert.equal(modals[0].message, 'Agent Host wants to edit a.py (edit_file)');
    assert.match(modals[0].detail, /-print\("old"\)\n\+print\("new"\)/);
    assert.deepEqual(modals[0].items, ['Allow', 'Always Allow edit_file', 'Reject', 'Always Reject edit_file']);
    const diff = ui.executed.find((e) => e.command === 'vscode.diff');
    assert.ok(diff, 'vscode.diff was opened');
    const [left, right, title] = diff.args as [any, any, string];
    assert.equal(title, 'a.py: proposed edit (Agent Host)');
    assert.equal(left.scheme, 'agent-host-proposal');
    // the documents were served while the question was open (and dropped after)
    assert.equal(ui.contentProviders.get('agent-host-proposal')!.provideTextDocumentContent(right), '');

    const state = await waitFor(() => {
        const s = lastRender();
        return !s.running && s.entries.length >= 5 ? s : undefined;
    }, 'the chat view to show the finished turn');
    assert.deepEqual(
        state.entries.map((e) => e.role),
        ['user', 'assistant', 'tool', 'file', 'assistant', 'review'],
    );
    assert.equal(state.entries[4].text, 'a.py now prints new.');
    assert.equal(state.cost, '$0.0000');
    assert.equal(ui.statusBar.text, '$(hubot) $0.0000');
    assert.ok(ui.output.some((l) => l.includes('turn ') && l.includes('end_turn')), ui.output.join('\n'));
});

test('Show History opens the conversation as Markdown', async () => {
    await ui.commands.get('agentHost.showHistory')!();
    const provider = ui.contentProviders.get('agent-host-history')!;
    const opened = ui.messages.filter((m) => m.level === 'error');
    assert.deepEqual(opened, []);
    const sessionId = lastRender().title;
    assert.ok(sessionId.length > 0);
    const all = [...(provider as any).docs.values()] as string[];
    assert.equal(all.length, 1);
    assert.match(all[0], /## You\n\nMake a\.py print new/);
    assert.match(all[0], /\*\*Tool\*\* `edit_file a\.py`/);
});

test('Restore Checkpoint puts the file back; Undo Restore takes it forward again', async () => {
    ui.picks.push(
        (items) => {
            assert.equal(items.length, 1);
            assert.equal(items[0].label, '1 · Make a.py print new');
            assert.equal(items[0].detail, 'changed: a.py');
            return items[0];
        },
        (modes) => {
            assert.deepEqual(
                modes.map((m: { label: string }) => m.label),
                ['Files and conversation', 'Files only', 'Conversation only'],
            );
            return modes[0];
        },
    );
    const shown = ui.quickPicks.length;
    const restoring = ui.commands.get('agentHost.restoreCheckpoint')!();
    // the preview, before anything is written: a.py, ticked
    const preview = await waitFor(() => (ui.quickPicks.length > shown ? ui.quickPicks[ui.quickPicks.length - 1] : undefined), 'the restore preview');
    assert.match(preview.title ?? '', /^Restore to 1 · Make a\.py print new: 1 file · \d+ messages removed$/);
    assert.deepEqual(
        preview.selectedItems.map((i: { label: string; description: string }) => `${i.label} ${i.description}`),
        ['$(diff-modified) a.py will be changed · +1 −1'],
    );
    assert.equal(fs.readFileSync(path.join(root, 'a.py'), 'utf8'), 'print("new")\n', 'nothing written by the preview');
    preview.acceptSelection();
    await restoring;
    assert.equal(fs.readFileSync(path.join(root, 'a.py'), 'utf8'), 'print("old")\n');
    assert.deepEqual(ui.messages.filter((m) => m.level === 'error'), []);
    assert.match(ui.messages[ui.messages.length - 1].message, /^Agent Host: restored 1 file: a\.py; 3 messages removed\.$/);
    // the conversation was rewound: only the note about the restore is left
    await waitFor(() => lastRender().entries.length === 1 || undefined, 'the rewound transcript');
    assert.equal(lastRender().entries[0].role, 'info');
    assert.equal(lastRender().entries[0].text, 'Restored to 1 · Make a.py print new (files and conversation): 1 file: a.py; 3 messages removed.');

    await ui.commands.get('agentHost.undoRestore')!();
    assert.equal(fs.readFileSync(path.join(root, 'a.py'), 'utf8'), 'print("new")\n');
    assert.equal(ui.messages[ui.messages.length - 1].message, 'Agent Host: restore undone (1 file and 3 messages back).');
    await waitFor(() => lastRender().entries.length >= 4 || undefined, 'the rebuilt transcript');
});

test('Cancel stops a running turn', async () => {
    const turn = ui.commands.get('agentHost.sendPrompt')!('Say something slowly');
    await waitFor(() => {
        const entries = lastRender().entries;
        return entries[entries.length - 1]?.role === 'assistant' || undefined;
    }, 'the first words of the answer');
    await ui.commands.get('agentHost.cancel')!();
    await turn;
    await waitFor(() => {
        const state = lastRender();
        return (!state.running && state.entries[state.entries.length - 1]?.text === 'Turn cancelled.') || undefined;
    }, 'the cancelled turn in the chat');
    assert.deepEqual(ui.messages.filter((m) => m.level === 'error'), []);
});

test('Compact Session and Show Checkpoints', async () => {
    ui.inputs.push('');
    await ui.commands.get('agentHost.compactSession')!();
    assert.match(ui.messages[ui.messages.length - 1].message, /^Agent Host: compacted, \d+ → \d+ tokens\.$/);
    let seen: string[] = [];
    ui.picks.push((items) => {
        seen = items.map((i: { label: string }) => i.label);
        return undefined; // just looking
    });
    await ui.commands.get('agentHost.showCheckpoints')!();
    assert.equal(seen.length, 2);
    assert.match(seen[0], /Say something slowly/, 'newest first');
});

test('New Session starts an empty session and makes it current', async () => {
    const before = lastRender().title;
    ui.inputs.push('Second session');
    await ui.commands.get('agentHost.newSession')!();
    await waitFor(() => lastRender().title === 'Second session' || undefined, 'the new session in the chat');
    assert.notEqual(before, 'Second session');
    assert.deepEqual(lastRender().entries, []);
    assert.deepEqual(ui.messages.filter((m) => m.level === 'error'), []);
});

test("List Sessions shows this workspace's sessions, every workspace's on request, and resumes the picked one", async () => {
    // a session started in another project, by another server on the same store
    // (prompted: a session is stored, and listed, from its first prompt)
    const elsewhere = await serve({ steps: [{ text: 'Hi.' }], store: path.join(dir, 'store') });
    const otherFolder = path.basename(elsewhere.dir);
    let theirs: string;
    try {
        theirs = (await elsewhere.client.api.newSession({ title: 'Elsewhere' })).sessionId;
        await elsewhere.client.api.send({ sessionId: theirs, prompt: 'hello' });
    } finally {
        await elsewhere.close();
    }

    const listing = ui.commands.get('agentHost.listSessions')!();
    const picker = await waitFor(() => {
        const p = ui.quickPicks[ui.quickPicks.length - 1];
        return p && !p.busy && p.items.some((i) => i.session) ? p : undefined;
    }, 'the loaded session list');
    assert.equal(picker.title, 'Agent Host: Sessions of project');
    const sessions = () => picker.items.filter((i) => i.session);
    // the current session has no prompt yet, so it is stored nowhere: the top item
    const [pending] = picker.items;
    assert.equal(pending.label, '$(arrow-right) Second session');
    assert.ok(pending.pending && !pending.session, 'the new session is not a stored one');
    assert.match(pending.description, /^new · stored from its first prompt$/);
    assert.deepEqual(
        sessions().map((i) => i.label),
        ['Make a.py print new'],
        "this workspace's stored ones, newest first; not the other project's",
    );
    assert.match(sessions()[0].description, /^2 turns · /);
    assert.equal(sessions()[0].detail, sessions()[0].session.sessionId);
    const toAll = picker.items[picker.items.length - 1];
    assert.equal(toAll.label, '$(folder-library) Sessions of every workspace');

    // every workspace: the other project's session too, each with its folder
    picker.accept(toAll);
    await waitFor(() => (!picker.busy && sessions().length === 2) || undefined, "every workspace's sessions");
    assert.equal(picker.title, 'Agent Host: Sessions of every workspace');
    assert.equal(picker.items[0].label, '$(arrow-right) Second session', 'the current one still on top');
    assert.ok(picker.items[0].detail.includes(`${path.basename(dir)}${path.sep}project · `), picker.items[0].detail);
    const [newest, ...mine] = sessions();
    assert.equal(newest.label, 'Elsewhere');
    assert.equal(newest.session.sessionId, theirs);
    assert.ok(newest.detail.includes(otherFolder) && newest.detail.endsWith(` · ${theirs}`), newest.detail);
    for (const item of mine) {
        assert.ok(item.detail.includes(`${path.basename(dir)}${path.sep}project · `), item.detail);
    }
    assert.equal(picker.items[picker.items.length - 1].label, '$(folder) Sessions of project only');

    picker.accept(mine[0]);
    await listing;
    const state = await waitFor(() => {
        const s = lastRender();
        return s.title !== 'Second session' && s.entries.length ? s : undefined;
    }, 'the resumed session in the chat');
    // compacted: the summary stands in for the first turn, the last prompt is kept
    assert.deepEqual(
        state.entries.map((e) => e.role),
        ['info', 'user', 'assistant'],
    );
    assert.match(state.entries[0].text!, /^Summary of the conversation so far:/);
    assert.equal(state.entries[1].text, 'Say something slowly');
    assert.equal(state.cost, '$0.0000', 'the cost this window saw is kept');
    assert.deepEqual(ui.messages.filter((m) => m.level === 'error'), []);
});

test('a new session, once prompted, is listed once: stored, current, no longer the pending top item', async () => {
    ui.inputs.push('Third session');
    await ui.commands.get('agentHost.newSession')!();
    ui.inputs.push('Say hello');
    await ui.commands.get('agentHost.sendPrompt')!();
    const shown = ui.quickPicks.length;
    const listing = ui.commands.get('agentHost.listSessions')!();
    const picker = await waitFor(() => {
        const p = ui.quickPicks.length > shown ? ui.quickPicks[ui.quickPicks.length - 1] : undefined;
        return p && !p.busy && p.items.some((i) => i.session) ? p : undefined;
    }, 'the loaded session list');
    const labels = picker.items.filter((i) => i.session || i.pending).map((i) => i.label);
    assert.deepEqual(labels, ['$(arrow-right) Third session', 'Make a.py print new']);
    assert.ok(picker.items[0].session && !picker.items[0].pending, 'listed as the stored session it now is');
    picker.hide();
    await listing;
});

test('Restart Server stops the client cleanly: no restart notices, exit code 0 is no error', async () => {
    const from = ui.output.length;
    const errorsBefore = ui.messages.filter((m) => m.level === 'error').length;
    await ui.commands.get('agentHost.restartServer')!();
    await waitFor(() => ui.output.slice(from).some((l) => /Server process exited with code 0/.test(l)), 'the old server to exit');
    await ui.commands.get('agentHost.restartServer')!();
    await waitFor(
        () => ui.output.slice(from).filter((l) => /Server process exited with code 0/.test(l)).length === 2,
        'the second server to exit',
    );
    const lines = ui.output.slice(from);
    assert.deepEqual(lines.filter((l) => /got closed|will restart|^\[Error/.test(l)), [], lines.join('\n'));
    assert.ok(lines.filter((l) => /exited with code 0/.test(l)).every((l) => l.startsWith('[Info')), lines.join('\n'));
    assert.equal(ui.messages.filter((m) => m.level === 'error').length, errorsBefore);
    assert.equal(lines.filter((l) => /running \(protocol/.test(l)).length, 2, 'one new server per restart');
});

test('a serverPath under ~ is looked for in the home folder; a failed start is one error toast', async () => {
    const other = createFakeVscode(root);
    other.ui.config = { 'agentHost.serverPath': '~/agent-host-no-such-dir/agent-host' };
    const second = loadBundle(other.vscode);
    second.activate(context());
    try {
        other.ui.inputs.push('hello');
        await other.ui.commands.get('agentHost.sendPrompt')!();
        await new Promise((r) => setTimeout(r, 100)); // a late toast of the client's would land here
        const errors = other.ui.messages.filter((m) => m.level === 'error').map((m) => m.message);
        assert.equal(errors.length, 1, errors.join('\n'));
        assert.ok(errors[0].includes(`${path.join(os.homedir(), 'agent-host-no-such-dir', 'agent-host')} serve`), errors[0]);
        assert.ok(!errors[0].includes('~/'), errors[0]);
        assert.equal(errors[0].match(/Agent Host:/g)?.length, 1, errors[0]);
    } finally {
        await second.deactivate();
    }
});

test('a server that cannot start is reported with what to do', async () => {
    const other = createFakeVscode(root);
    other.ui.config = { 'agentHost.serverPath': path.join(dir, 'no-such', 'agent-host') };
    const second = loadBundle(other.vscode);
    second.activate(context());
    try {
        other.ui.inputs.push('hello');
        await other.ui.commands.get('agentHost.sendPrompt')!();
        const errors = other.ui.messages.filter((m) => m.level === 'error').map((m) => m.message);
        assert.ok(
            errors.some((m) => /no-such\/agent-host` was not found, so `.*no-such\/agent-host serve` cannot start.*agentHost\.serverPath/.test(m)),
            errors.join('\n'),
        );
        assert.equal(errors.length, 1, errors.join('\n'));
    } finally {
        await second.deactivate();
    }
});
