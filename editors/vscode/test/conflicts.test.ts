/**
 * Restore conflicts in the bundled extension (on the stand-in `vscode` module,
 * against the real server): a file the user changed after the agent's turn,
 * while the restore's preview was up, is left as it is by the restore, which warns naming it and offers
 * Overwrite them (undo, then the same restore with `force`); Undo Restore warns
 * about a file changed since the restore wrote it, and leaves it.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { context, loadBundle, type Loaded } from './bundle';
import { createFakeVscode, fakeWebviewView, type FakeUi } from './fakeVscode';
import { PYTHON, waitFor } from './helpers';

let dir: string;
let root: string;
let ui: FakeUi;
let extension: Loaded;
let view: ReturnType<typeof fakeWebviewView>;

const read = (name: string) => fs.readFileSync(path.join(root, name), 'utf8');
const write = (name: string, text: string) => fs.writeFileSync(path.join(root, name), text);

before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-host-vscode-conflicts-'));
    root = path.join(dir, 'project');
    fs.mkdirSync(root);
    write('a.py', 'x = 1\n');
    write('b.py', 'y = 1\n');
    const script = path.join(dir, 'script.json');
    fs.writeFileSync(
        script,
        JSON.stringify({
            steps: [
                {
                    text: 'Changing both.',
                    tool_calls: [
                        { name: 'write_file', arguments: { path: 'a.py', content: 'x = 2\n' } },
                        { name: 'write_file', arguments: { path: 'b.py', content: 'y = 2\n' } },
                    ],
                },
                { text: 'Both are 2 now.' },
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
    extension.activate(context());
    view = fakeWebviewView();
    ui.viewProviders.get('agentHost.chat').resolveWebviewView(view.view);
    view.send({ type: 'ready' });
});

after(async () => {
    await extension?.deactivate();
    fs.rmSync(dir, { recursive: true, force: true });
});

function notes(): { text: string; level: string }[] {
    const renders = view.posted.filter((m) => m.type === 'render');
    const entries = renders[renders.length - 1].state.entries as { role: string; text: string; level: string }[];
    return entries.filter((e) => e.role === 'info').map(({ text, level }) => ({ text, level }));
}

function since(count: number) {
    return ui.messages.slice(count).map(({ level, message, items }) => ({ level, message, items }));
}

test('a file the user changed is left and named; Overwrite them restores it too; Undo Restore brings the edit back', async () => {
    ui.inputs.push('Make both 2');
    await ui.commands.get('agentHost.sendPrompt')!();
    assert.equal(read('a.py'), 'x = 2\n');
    assert.equal(read('b.py'), 'y = 2\n');

    let atWarning: { a: string; b: string } | undefined;
    ui.answer = (message, items) => {
        if (items.includes('Overwrite them')) {
            atWarning = { a: read('a.py'), b: read('b.py') };
            return 'Overwrite them';
        }
        return undefined;
    };
    ui.picks.push(
        (items) => {
            assert.equal(items.length, 1);
            assert.equal(items[0].detail, 'changed: a.py, b.py');
            return items[0];
        },
        (modes) => modes[0], // files and conversation
    );
    const before = ui.messages.length;
    const restoring = ui.commands.get('agentHost.restoreCheckpoint')!();
    // the preview ticks both; the user edits a.py while it is up (after the agent's turn)
    const preview = await waitFor(() => ui.quickPicks[ui.quickPicks.length - 1], 'the restore preview');
    assert.deepEqual(
        preview.selectedItems.map((i: { file: { path: string } }) => i.file.path),
        ['a.py', 'b.py'],
    );
    write('a.py', 'x = 3  # mine\n');
    preview.acceptSelection();
    await restoring;

    // the restore put b.py back and left a.py, the user's, as it was; the warning said so
    assert.deepEqual(atWarning, { a: 'x = 3  # mine\n', b: 'y = 1\n' });
    const shown = since(before);
    assert.equal(shown[0].level, 'warning');
    assert.match(
        shown[0].message,
        /^Agent Host: 1 file changed since the agent last wrote it and was left as it is: a\.py\. Restored 1 file: b\.py; 3 messages removed\.$/,
    );
    assert.deepEqual(shown[0].items, ['Overwrite them', 'Undo Restore']);
    // Overwrite them: undo, then the same restore with force; a.py is overwritten too
    assert.equal(read('a.py'), 'x = 1\n');
    assert.equal(read('b.py'), 'y = 1\n');
    assert.equal(shown.length, 2, JSON.stringify(shown));
    assert.equal(shown[1].level, 'info');
    assert.match(
        shown[1].message,
        /^Agent Host: restored to 1 · Make both 2 again, overwriting a\.py: 2 files: a\.py, b\.py; 3 messages removed\. Undo Restore brings back what they held\.$/,
    );
    assert.deepEqual(shown[1].items, ['Undo Restore']);
    assert.deepEqual(ui.messages.filter((m) => m.level === 'error'), []);
    await waitFor(() => notes().length === 1 || undefined, 'the chat rebuilt after the forced restore');
    assert.deepEqual(notes(), [
        { text: 'Restored to 1 · Make both 2 again (files and conversation), overwriting a.py: 2 files: a.py, b.py; 3 messages removed.', level: 'info' },
    ]);

    // b.py changed after the restore wrote it: Undo Restore leaves it and warns; a.py gets the user's text back
    write('b.py', 'y = 5  # mine\n');
    const beforeUndo = ui.messages.length;
    await ui.commands.get('agentHost.undoRestore')!();
    assert.equal(read('a.py'), 'x = 3  # mine\n');
    assert.equal(read('b.py'), 'y = 5  # mine\n');
    const undone = since(beforeUndo);
    assert.equal(undone.length, 1, JSON.stringify(undone));
    assert.equal(undone[0].level, 'warning');
    assert.match(
        undone[0].message,
        /^Agent Host: 1 file changed since the restore wrote it and was left as it is: b\.py\. Restore undone \(1 file and 3 messages back\)\.$/,
    );
    const last = await waitFor(() => {
        const n = notes();
        return n.some((e) => e.text.startsWith('Restore undone')) ? n.slice(-2) : undefined;
    }, 'the chat rebuilt after the undo');
    assert.equal(last[0].text, 'Restore undone: 1 file and 3 messages back.');
    assert.deepEqual(last[1], { text: '1 file changed since the restore wrote it and was left as it is: b.py.', level: 'warning' });
});
