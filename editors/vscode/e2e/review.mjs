// Seeing before trusting (issue 25), driven as a user would on its own workbench
// (suite.mjs with CONFIG.scenarios = this file): what a turn changed, file by file
// and in the changes editor; Keep / Undo per file; the restore preview with a
// conflict, files unticked, and the restore writing what the preview showed; the
// agent's edit of an open file highlighted for a moment.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { waitFor } from './workbench.mjs';

const GREET = 'def greet(name):\n    return f"Hi, {name}!"\n';
const GREET_1 = 'def greet(name):\n    return f"Hello, {name}!"\n';
const GREET_2 = 'def greet(name):\n    return f"HELLO, {name}!"\n';
const NOTES = '# notes\n';
const NOTES_1 = '# notes\n- tidy greet\n';
const NOTES_2 = '# notes\n- shout\n';
const TODO = 'a\nb\n';
const MINE = 'a\nb\nmine\n';
const PROMPT_1 = 'Tidy greet and notes';
const PROMPT_2 = 'Shout';

/** The scripted model's answers, in the session's order. */
const STEPS = [
    {
        text: 'Tidying.',
        tool_calls: [
            { name: 'edit_file', arguments: { path: 'greet.py', old_string: 'Hi', new_string: 'Hello' } },
            { name: 'write_file', arguments: { path: 'notes.md', content: NOTES_1 } },
            { name: 'write_file', arguments: { path: 'todo.txt', content: TODO } },
        ],
    },
    { text: 'Tidied three files.' },
    {
        text: '',
        tool_calls: [
            { name: 'edit_file', arguments: { path: 'greet.py', old_string: 'Hello', new_string: 'HELLO' } },
            { name: 'write_file', arguments: { path: 'notes.md', content: NOTES_2 } },
        ],
    },
    { text: 'Shouted.' },
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function chatHas(wb, pattern, what, timeoutMs = 20_000) {
    let last = '';
    try {
        return await waitFor(async () => {
            last = await wb.chatText();
            return pattern.test(last) && last;
        }, what ?? `the chat to show ${pattern}`, timeoutMs);
    } catch (err) {
        throw new Error(`${err.message}; the chat showed: ${JSON.stringify(last)}`);
    }
}

/** A changed-file line of the chat. */
async function fileLine(wb, name) {
    const frame = await wb.chatFrame();
    const line = frame.locator('.entry.file', { has: frame.locator('a', { hasText: name }) }).last();
    await line.waitFor();
    return line;
}

const activeEditor = (wb) => wb.page.locator('.editor-group-container.active');

/** The active editor pane's text (the changes editor's headers and lines). */
async function paneText(wb) {
    return (await activeEditor(wb).locator('.editor-container').innerText()).replace(/\u00a0/g, ' ');
}

/** The two sides of the active diff editor, as rendered. */
async function diffSides(wb) {
    const side = (which) =>
        activeEditor(wb)
            .locator(`.monaco-diff-editor .${which}-in-monaco-diff-editor .view-lines .view-line`)
            .evaluateAll((nodes) =>
                nodes
                    .map((n) => ({ top: parseFloat(n.style.top || '0'), text: n.textContent.replace(/\u00a0/g, ' ') }))
                    .sort((a, b) => a.top - b.top)
                    .map((l) => l.text)
                    .join('\n'),
            );
    return { original: await side('original'), modified: await side('modified') };
}

const quickInput = (wb) => wb.page.locator('.quick-input-widget');
const row = (wb, text) => quickInput(wb).locator('.quick-input-list .monaco-list-row', { hasText: text }).first();

async function rowChecked(wb, text) {
    return waitFor(async () => {
        const checked = await row(wb, text).getAttribute('aria-checked');
        return checked === null ? undefined : checked === 'true' ? 'yes' : 'no';
    }, `the checkbox of ${text}`).then((v) => v === 'yes');
}

async function rowButton(wb, text, tooltip) {
    const r = row(wb, text);
    await r.hover();
    await r.locator(`.action-label[aria-label^="${tooltip}"]`).click();
}

export const scenarios = [
    [
        'the workbench opens on the project with greet.py open',
        async (ctx) => {
            ctx.model = ctx.script(STEPS);
            ctx.userSettings({
                ...ctx.baseSettings,
                'agentHost.serverPath': ctx.config.agentHost,
                'agentHost.store': ctx.store,
                'agentHost.model': ctx.model,
                'agentHost.approval': 'auto',
            });
            assert.equal(ctx.read('greet.py'), GREET);
            const wb = await ctx.openWorkbench();
            await wb.openFile('greet.py');
        },
    ],
    [
        "the agent's edit of the open greet.py is highlighted, then the highlight goes",
        async (ctx) => {
            const { wb } = ctx;
            await wb.command('Agent Host: Send Prompt');
            await wb.answerInput(PROMPT_1);
            const highlight = activeEditor(wb).locator('.monaco-editor .view-overlays [class*="ced-"]');
            await waitFor(async () => (await highlight.count()) > 0, 'the changed line highlighted', 15_000);
            // the highlighted line is the one the agent rewrote
            const top = await highlight.first().evaluate((n) => n.parentElement.style.top || n.style.top);
            const line = activeEditor(wb).locator('.monaco-editor .view-lines .view-line', { hasText: 'Hello' });
            assert.equal(await line.evaluate((n) => n.style.top), top);
            await wb.shot('agent edit highlighted');
            await chatHas(wb, /Tidied three files\./);
            await waitFor(async () => (await highlight.count()) === 0, 'the highlight to go', 15_000);
            assert.equal(ctx.read('greet.py'), GREET_1);
        },
    ],
    [
        "a changed-file line opens that file's diff; Review Changes shows the turn in the changes editor",
        async (ctx) => {
            const { wb } = ctx;
            const chat = await chatHas(wb, /created: todo\.txt/);
            assert.match(chat, /modified: greet\.py/);
            assert.match(chat, /modified: notes\.md/);
            assert.equal((chat.match(/modified: greet\.py/g) ?? []).length, 1, 'one line per file');
            await (await fileLine(wb, 'greet.py')).locator('a').click();
            await wb.page.locator('.tabs-container .tab.active', { hasText: /greet\.py \(Agent Host: turn 1/ }).waitFor();
            const sides = await waitFor(async () => {
                const s = await diffSides(wb);
                return s.original.includes('Hi') && s.modified.includes('Hello') && s;
            }, 'the diff of greet.py');
            assert.equal(sides.original, GREET);
            assert.equal(sides.modified, GREET_1);
            const frame = await wb.chatFrame();
            await frame.locator('.entry.review button', { hasText: 'Review Changes (3 files)' }).click();
            await wb.page.locator('.tabs-container .tab.active', { hasText: /turn 1 · Tidy greet and notes \(3 files\)/ }).waitFor();
            const text = await waitFor(async () => {
                const t = await paneText(wb);
                return ['greet.py', 'notes.md', 'todo.txt'].every((f) => t.includes(f)) && /tidy greet/.test(t) && t;
            }, 'the three files in the changes editor');
            assert.match(text, /Hello/);
            await wb.shot('review changes of a turn');
        },
    ],
    [
        'Undo one file of the turn: only notes.md goes back; Keep greet.py',
        async (ctx) => {
            const { wb } = ctx;
            await (await fileLine(wb, 'notes.md')).locator('button.undo').click();
            await chatHas(wb, /Undid the change to notes\.md of turn 1/);
            assert.equal(ctx.read('notes.md'), NOTES);
            assert.equal(ctx.read('greet.py'), GREET_1, 'the other files of the turn are left alone');
            assert.equal(ctx.read('todo.txt'), TODO);
            assert.match(await (await fileLine(wb, 'notes.md')).innerText(), /\(undone\)/);
            const greet = await fileLine(wb, 'greet.py');
            await greet.locator('button.keep').click();
            await waitFor(async () => /\(kept\)/.test(await greet.innerText()), 'greet.py kept');
            assert.equal(await greet.locator('button').count(), 0);
            assert.equal(ctx.read('greet.py'), GREET_1);
            await wb.shot('undo one file and keep another');
        },
    ],
    [
        'Review Changes… since a checkpoint: the net change of both turns',
        async (ctx) => {
            const { wb } = ctx;
            const frame = await wb.chatFrame();
            await frame.locator('#prompt').fill(PROMPT_2);
            await frame.locator('#prompt').press('Enter');
            await chatHas(wb, /Shouted\./);
            assert.equal(ctx.read('greet.py'), GREET_2);
            await wb.command('Agent Host: Review Changes…');
            await wb.pick(PROMPT_1);
            await wb.pick('Since this checkpoint');
            await wb.page.locator('.tabs-container .tab.active', { hasText: /since 1 · Tidy greet and notes \(3 files\)/ }).waitFor();
            const text = await waitFor(async () => {
                const t = await paneText(wb);
                return /HELLO/.test(t) && /shout/.test(t) && t;
            }, 'the net change in the changes editor');
            assert.match(text, /todo\.txt/);
        },
    ],
    [
        'the restore preview: counts, a conflict with Compare, files unticked; the restore writes what the preview showed',
        async (ctx) => {
            const { wb } = ctx;
            ctx.write('todo.txt', MINE); // the user's change since the agent's
            await wb.command('Agent Host: Restore Checkpoint…');
            await wb.pick(PROMPT_1);
            await wb.pick('Files and conversation');
            // The mode picker's title is "Restore to 1 · …" too: the preview's own is "…: <counts>".
            await waitFor(async () => /Restore to 1 · Tidy greet and notes: \d+ files? ·/.test(await quickInput(wb).innerText()), 'the preview');
            const shown = (await quickInput(wb).innerText()).replace(/\s+/g, ' ');
            assert.match(shown, /3 files · 1 conflict · \d+ messages removed/);
            assert.match(shown, /greet\.py\s*will be changed · \+1 −1/);
            assert.match(shown, /notes\.md\s*will be changed · \+0 −1/);
            assert.match(shown, /todo\.txt\s*will be deleted · \+0 −3/);
            assert.match(shown, /you changed it since the agent/i);
            assert.equal(await rowChecked(wb, 'greet.py'), true);
            assert.equal(await rowChecked(wb, 'notes.md'), true);
            assert.equal(await rowChecked(wb, 'todo.txt'), false, 'a conflict is left unticked');
            // Review All: the whole restore in the changes editor, the preview still open
            await quickInput(wb).locator('.quick-input-titlebar .action-label[aria-label^="Review All"]').click();
            await wb.page.locator('.tabs-container .tab.active', { hasText: /restore to 1 · Tidy greet and notes: now ↔ after/ }).waitFor();
            await waitFor(async () => {
                const t = await paneText(wb);
                return ['greet.py', 'notes.md', 'todo.txt'].every((f) => t.includes(f)) && /mine/.test(t);
            }, 'the restore in the changes editor');
            assert.ok(await quickInput(wb).isVisible());
            await wb.shot('restore preview');
            // Compare: the agent's text against the user's, nothing written yet
            await rowButton(wb, 'todo.txt', 'Compare');
            await wb.page.locator('.tabs-container .tab.active', { hasText: /todo\.txt: the agent's last text/ }).waitFor();
            const conflict = await waitFor(async () => {
                const s = await diffSides(wb);
                return s.original.includes('b') && s.modified.includes('mine') && s;
            }, 'the conflict diff');
            assert.equal(conflict.original, TODO);
            assert.equal(ctx.read('todo.txt'), MINE);
            // what the restore would write to greet.py, as the preview shows it
            await rowButton(wb, 'greet.py', 'Show');
            await wb.page.locator('.tabs-container .tab.active', { hasText: /greet\.py: now ↔ after the restore/ }).waitFor();
            const greet = await waitFor(async () => {
                const s = await diffSides(wb);
                return s.original.includes('HELLO') && s.modified.includes('Hi') && s;
            }, 'the diff of what the restore writes');
            await wb.shot('restore preview with a file diff');
            assert.ok(await quickInput(wb).isVisible(), 'the preview stays open beside the diffs');
            // untick notes.md, then restore the ticked files
            await row(wb, 'notes.md').locator('.quick-input-list-checkbox, input[type=checkbox], .monaco-checkbox').first().click();
            await waitFor(async () => !(await rowChecked(wb, 'notes.md')), 'notes.md unticked');
            assert.equal(ctx.read('greet.py'), GREET_2, 'nothing written by the preview');
            await quickInput(wb).locator('.quick-input-box input').press('Enter');
            await chatHas(wb, new RegExp(`Restored to 1 · ${PROMPT_1} \\(files and conversation\\): `));
            assert.equal(ctx.read('greet.py'), greet.modified, 'greet.py holds what the preview showed');
            assert.equal(ctx.read('greet.py'), GREET);
            assert.equal(ctx.read('notes.md'), NOTES_2, 'an unticked file is left as it is');
            assert.equal(ctx.read('todo.txt'), MINE, 'the unticked conflict keeps the user’s change');
            assert.ok(fs.existsSync(ctx.file('todo.txt')));
            assert.doesNotMatch(await wb.chatText(), new RegExp(PROMPT_2));
            await wb.shot('restored the ticked files');
        },
    ],
];
