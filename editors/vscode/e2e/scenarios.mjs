// The steps of the suite, in order: each builds on the workbench the previous left
// (one session, its turns played by the scripted model below).

import assert from 'node:assert/strict';
import { waitFor } from './workbench.mjs';

export const GREET = 'def greet(name):\n    return f"Hi, {name}!"\n';
const NOTES = '# notes\n';
const AGENT_NOTES = '# notes\n- written by the agent\n';
const PROMPT_1 = 'Make greet() say Hello';
const PROMPT_2 = 'Write the notes';

/** The model's answers, by the number of answers already in the session's log. */
const STEPS = [
    // turn 1 (from the palette, with the selection as context): an edit of the open,
    // unsaved greet.py, then the answer
    {
        text: 'I will make greet() polite.',
        tool_calls: [{ name: 'edit_file', arguments: { path: 'greet.py', old_string: 'Hi', new_string: 'Hello' } }],
        usage: { input_tokens: 120, output_tokens: 30 },
    },
    { text: 'Done: greet() says Hello.', usage: { input_tokens: 150, output_tokens: 10 } },
    // turn 2 (from the chat box): a write the user allows, an edit the user rejects
    { text: 'Writing the notes.', tool_calls: [{ name: 'write_file', arguments: { path: 'notes.md', content: AGENT_NOTES } }] },
    { text: '', tool_calls: [{ name: 'edit_file', arguments: { path: 'greet.py', old_string: 'Hi', new_string: 'Howdy' } }] },
    { text: 'Wrote the notes; left greet.py.' },
    // turn 3: slow, cancelled before it says anything (so the next turn plays it again)
    { text: 'Still here.', delay_ms: 3000 },
    // the turns after the server is restarted on changed settings
    { text: 'Still here.' },
    { text: 'Still here.' },
    { text: 'Still here.' },
    { text: 'Still here.' },
];

const literal = (text) => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
/** A chat line with `text` that is not a restore's note (which names the checkpoint by its prompt). */
const asked = (text) => new RegExp(`^(?!Restored to ).*${literal(text).source}`, 'm');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** How long a wait that includes an agent-host start may take: its imports alone take
 * seconds when CI's test processes and tsc share two cores. A hung server still fails. */
const SERVER_START_MS = 60_000;

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

/** The editor of `name` shows `text`, dirty or not as `dirty` says. */
async function editorIs(wb, name, text, dirty) {
    await wb.tab(name).click();
    await waitFor(async () => (await wb.editorText()) === text, `${name} to show ${JSON.stringify(text)}`);
    await waitFor(async () => (await wb.isDirty(name)) === dirty, `${name} to be ${dirty ? 'dirty' : 'clean'}`);
}

/** The restore's preview is up: restore the files it ticks (Enter); review.mjs tests it. */
async function acceptPreview(wb) {
    const widget = wb.page.locator('.quick-input-widget');
    await waitFor(async () => /messages? removed/.test(await widget.innerText()), 'the restore preview');
    await widget.locator('.quick-input-box input').press('Enter');
}

async function noSaveConflict(wb) {
    const toasts = (await wb.toasts()).join('\n');
    assert.doesNotMatch(toasts, /Failed to save|newer/i, toasts);
}

function userSettings(ctx, extra = {}) {
    return {
        ...ctx.baseSettings,
        'agentHost.serverPath': ctx.config.agentHost,
        'agentHost.store': ctx.store,
        'agentHost.model': ctx.model,
        ...extra,
    };
}

export const scenarios = [
    [
        'code-server starts with the extension installed',
        async (ctx) => {
            ctx.model = ctx.script(STEPS);
            ctx.userSettings(userSettings(ctx));
            const wb = await ctx.openWorkbench();
            // its view container is there; the chat view itself is not opened yet
            await wb.page.locator('.activitybar [aria-label^="Agent Host"]').first().waitFor({ timeout: 30_000 });
            await wb.shot('started');
        },
    ],
    [
        'a prompt from the palette edits the open, unsaved file: clean and equal to the disk',
        async (ctx) => {
            const { wb } = ctx;
            await wb.openFile('greet.py');
            await wb.press('Control+End');
            await wb.type('# mine');
            await waitFor(() => wb.isDirty('greet.py'), 'greet.py to be dirty');
            assert.equal(ctx.read('greet.py'), GREET);
            // the selection goes along as context: line 2
            await wb.press('Control+Home');
            await wb.press('ArrowDown');
            await wb.press('Home');
            await wb.press('Shift+End');
            await wb.shot('unsaved change and selection');
            await wb.command('Agent Host: Send Prompt');
            await wb.answerInput(PROMPT_1);
            const modal = await wb.modal();
            assert.match(modal, /wants to edit greet\.py/);
            // the chat is up (with the prompt) while the modal asks, not a blank side bar
            const shownAt = Date.now();
            await chatHas(wb, literal(PROMPT_1), 'the prompt in the chat while the modal is up', 10_000);
            console.log(`# the chat showed the prompt ${Date.now() - shownAt} ms after the modal`);
            await wb.shot('permission modal with the diff and the chat');
            await wb.answerModal('Allow');
            await chatHas(wb, /Done: greet\(\) says Hello\./);
            const expected = 'def greet(name):\n    return f"Hello, {name}!"\n# mine';
            await editorIs(wb, 'greet.py', expected, false);
            assert.equal(ctx.read('greet.py'), expected);
            const chat = await wb.chatText();
            assert.match(chat, /greet\.py \(1 line\)/, 'the selection shows as a chip');
            assert.doesNotMatch(chat, /<context/, 'the context block is not shown as text');
            assert.match(await wb.statusBar(), /\$0\.\d{4}/, 'the status bar item shows the cost');
            await noSaveConflict(wb);
            await wb.shot('turn 1 done');
        },
    ],
    [
        "one Undo takes the agent's edit back (dirty); Save writes it without a conflict",
        async (ctx) => {
            const { wb } = ctx;
            await wb.focusEditor();
            await wb.press('Control+Z');
            const mine = `${GREET}# mine`;
            await editorIs(wb, 'greet.py', mine, true);
            await wb.shot('undone');
            await wb.press('Control+S');
            await waitFor(async () => !(await wb.isDirty('greet.py')), 'greet.py saved');
            await sleep(500);
            await noSaveConflict(wb);
            assert.equal(ctx.read('greet.py'), mine);
            await wb.shot('saved');
        },
    ],
    [
        'a prompt from the chat box: an allowed write reaches the open, unsaved notes; a rejected edit shows as rejected',
        async (ctx) => {
            const { wb } = ctx;
            await wb.openFile('notes.md');
            await wb.press('Control+End');
            await wb.type('draft line');
            await waitFor(() => wb.isDirty('notes.md'), 'notes.md dirty');
            // notes.md in a background tab: the revert that makes it clean needs it active
            await wb.tab('greet.py').click();
            const frame = await wb.chatFrame();
            await frame.locator('#prompt').fill(PROMPT_2);
            await frame.locator('#prompt').press('Enter');
            assert.match(await wb.modal(), /wants to write notes\.md/);
            await wb.answerModal('Allow');
            assert.match(await wb.modal(), /wants to edit greet\.py/);
            await wb.shot('second modal');
            await wb.answerModal('Reject');
            await chatHas(wb, /Wrote the notes; left greet\.py\./);
            await waitFor(async () => (await wb.tab('greet.py').getAttribute('class')).split(/\s+/).includes('active'), 'greet.py active again');
            await editorIs(wb, 'notes.md', AGENT_NOTES, false);
            assert.equal(ctx.read('notes.md'), AGENT_NOTES);
            assert.equal(ctx.read('greet.py'), `${GREET}# mine`);
            assert.match(await wb.chatText(), /Tool ✗/);
            await wb.shot('turn 2 done');
        },
    ],
    [
        'restore files and conversation: the unsaved notes come back dirty; the chat keeps changed files and chips; Undo Restore',
        async (ctx) => {
            const { wb } = ctx;
            await wb.clearToasts();
            await wb.command('Agent Host: Restore Checkpoint…');
            await wb.pick(PROMPT_2);
            await wb.pick('Files and conversation');
            await acceptPreview(wb);
            await chatHas(wb, new RegExp(`Restored to 2 · ${PROMPT_2} \\(files and conversation\\): \\d+ files?: [^\\n]*; \\d+ messages removed\\.`));
            assert.equal(ctx.read('notes.md'), NOTES);
            await editorIs(wb, 'notes.md', `${NOTES}draft line`, true);
            const chat = await wb.chatText();
            assert.doesNotMatch(chat, asked(PROMPT_2));
            assert.match(chat, /modified: greet\.py/);
            assert.match(chat, /greet\.py \(1 line\)/);
            assert.doesNotMatch(chat, /<context/);
            await wb.shot('restored files and conversation');
            await wb.command('Agent Host: Undo Restore');
            await chatHas(wb, /Restore undone: \d+ files? and \d+ messages back\./);
            await editorIs(wb, 'notes.md', AGENT_NOTES, false);
            assert.equal(ctx.read('notes.md'), AGENT_NOTES);
            const back = await wb.chatText();
            assert.match(back, asked(PROMPT_2));
            assert.match(back, /Tool ✗/, 'the rejected call is still shown as rejected');
            assert.match(back, /created: notes\.md|modified: notes\.md/);
            await wb.shot('restore undone');
        },
    ],
    [
        'restore files only, then conversation only, each undone',
        async (ctx) => {
            const { wb } = ctx;
            await wb.command('Agent Host: Restore Checkpoint…');
            await wb.pick(PROMPT_2);
            await wb.pick('Files only');
            await acceptPreview(wb);
            await waitFor(() => ctx.read('notes.md') === NOTES, 'notes.md restored on disk');
            await chatHas(wb, new RegExp(`${PROMPT_2}[\\s\\S]*Restored to 2 · ${PROMPT_2} \\(files only\\): [^\\n]*; the conversation kept\\.`), 'the conversation kept');
            await wb.shot('restored files only');
            await wb.command('Agent Host: Undo Restore');
            await waitFor(() => ctx.read('notes.md') === AGENT_NOTES, 'notes.md back');
            await editorIs(wb, 'notes.md', AGENT_NOTES, false);
            await wb.command('Agent Host: Restore Checkpoint…');
            await wb.pick(PROMPT_2);
            await wb.pick('Conversation only');
            await chatHas(wb, new RegExp(`Restored to 2 · ${PROMPT_2} \\(conversation only\\): no files; \\d+ messages removed\\.`));
            assert.doesNotMatch(await wb.chatText(), asked(PROMPT_2));
            assert.equal(ctx.read('notes.md'), AGENT_NOTES);
            await wb.shot('restored conversation only');
            await wb.command('Agent Host: Undo Restore');
            await chatHas(wb, asked(PROMPT_2));
            await noSaveConflict(wb);
        },
    ],
    [
        'cancel a running turn from the chat',
        async (ctx) => {
            const { wb } = ctx;
            const frame = await wb.chatFrame();
            await frame.locator('#prompt').fill('Think slowly');
            await frame.locator('#prompt').press('Enter');
            await waitFor(async () => /sync~spin|codicon-sync/.test(await wb.page.locator('.statusbar').innerHTML()), 'the spinner');
            await waitFor(async () => !(await frame.locator('#cancel').isDisabled()), 'Cancel enabled');
            await frame.locator('#cancel').click();
            await chatHas(wb, /Turn cancelled\./, 'the cancelled turn');
            await waitFor(async () => await frame.locator('#cancel').isDisabled(), 'Cancel disabled again');
            await wb.shot('cancelled');
        },
    ],
    [
        'after a window reload the remembered session is shown again',
        async (ctx) => {
            const { wb } = ctx;
            await wb.reload();
            await wb.command('Agent Host: Show Chat');
            // the reloaded extension starts a server to read the session back
            const chat = await chatHas(wb, literal(PROMPT_2), 'the remembered conversation', SERVER_START_MS);
            assert.doesNotMatch(chat, /No session yet/);
            const title = await (await wb.chatFrame()).locator('#title').innerText();
            assert.equal(title, PROMPT_1);
            assert.doesNotMatch(chat, /not started/);
            await wb.shot('reloaded');
        },
    ],
    [
        'List Sessions and Show History: titles and history without the context block',
        async (ctx) => {
            const { wb } = ctx;
            await wb.command('Agent Host: List Sessions');
            const rows = await waitFor(async () => {
                const all = (await wb.quickPickRows()).join('\n');
                return /Sessions of every workspace/.test(all) && /turns?/.test(all) && all;
            }, 'the sessions');
            assert.match(rows, literal(PROMPT_1));
            assert.doesNotMatch(rows, /<context|return f"Hi/);
            await wb.shot('list sessions');
            await wb.pick(PROMPT_1);
            await chatHas(wb, literal(PROMPT_2));
            await wb.command('Agent Host: Show History');
            await wb.page.locator('.tabs-container .tab.active', { hasText: /^\d{8}-\d{6}-[0-9a-f]+\.md/ }).waitFor();
            const history = await waitFor(async () => {
                const text = await wb.editorText();
                return /## You/.test(text) && text;
            }, 'the history document');
            assert.match(history, literal(`# ${PROMPT_1}`));
            assert.match(history, /## You/);
            assert.doesNotMatch(history, /<context/);
            await wb.shot('history');
        },
    ],
    [
        'a server that fails to start: one toast, ~ expanded',
        async (ctx) => {
            const { wb } = ctx;
            await wb.clearToasts();
            await wb.editSettings('User', ctx.settingsFile('User'), userSettings(ctx, { 'agentHost.serverPath': '~/no-such-dir/agent-host' }));
            await wb.toastButton('settings changed', 'Restart');
            const toasts = await waitFor(async () => {
                const all = await wb.toasts();
                return all.some((t) => /cannot start/.test(t)) && all;
            }, 'the failed start toast');
            await sleep(1500);
            const errors = (await wb.toasts()).filter((t) => /cannot start|couldn't create|not running|initialization failed/i.test(t));
            assert.equal(errors.length, 1, errors.join('\n---\n'));
            assert.doesNotMatch(errors[0], /Agent Host: Agent Host/);
            assert.doesNotMatch(errors[0], /~\//, 'the ~ is expanded');
            assert.ok(toasts.length >= 1);
            await wb.shot('failed start');
        },
    ],
    [
        'User settings hold in a remote window after a change and a restart; Remote settings too',
        async (ctx) => {
            const { wb } = ctx;
            const ask = async (prompt) => {
                const frame = await wb.chatFrame();
                const before = ((await wb.chatText()).match(/Still here\./g) ?? []).length;
                await frame.locator('#prompt').fill(prompt);
                await frame.locator('#prompt').press('Enter');
                // (a server may start first: after a failed start, or a restart)
                await waitFor(async () => ((await wb.chatText()).match(/Still here\./g) ?? []).length > before, `an answer to ${prompt}`, SERVER_START_MS);
            };
            const restartOnToast = async () => {
                await wb.toastButton('settings changed', 'Restart');
                await waitFor(async () => /server restarted/.test(await wb.statusBar()), 'the restart', SERVER_START_MS);
            };
            // no server runs after the failed start: the next prompt starts one on the new settings
            await wb.clearToasts();
            await wb.editSettings('User', ctx.settingsFile('User'), userSettings(ctx, { 'agentHost.approval': 'auto' }));
            await ask('Are you there?');
            // a change while it runs, and Restart: the User values still hold
            await wb.editSettings('User', ctx.settingsFile('User'), userSettings(ctx, { 'agentHost.approval': 'auto-edit' }));
            await restartOnToast();
            await ask('Still there?');
            // a server restart is quiet: no error toast
            const errors = (await wb.toasts()).filter((t) => /cannot start|exited|closed/i.test(t));
            assert.deepEqual(errors, []);
            await wb.shot('after a restart on user settings');
            // the remote machine's own settings (Remote [code-server]) win over the User ones
            await wb.editSettings('Remote', ctx.settingsFile('Machine'), { 'agentHost.serverPath': ctx.config.agentHost });
            await wb.editSettings('User', ctx.settingsFile('User'), userSettings(ctx, { 'agentHost.serverPath': '~/no-such-dir/agent-host', 'agentHost.approval': 'auto' }));
            await restartOnToast();
            await ask('And now?');
            await wb.shot('remote settings');
        },
    ],
];
