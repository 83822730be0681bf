/**
 * A client with workspace.applyEdit: the test plays an editor whose buffers live
 * in memory (MemoryEditor). The agent's edits reach an open buffer as
 * workspace/applyEdit, a restore brings the buffer back, its undo forward again.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MemoryEditor } from '../src/protocol/edits';
import { serve, type Fixture } from './helpers';

const ORIGINAL = 'print("a")\n';
const UNSAVED = 'print("a")\nprint("unsaved 🙂")\n'; // an emoji: two UTF-16 units
const AGENT = 'print("a")\nprint("agent")\n';

function editorOf(f: Fixture): MemoryEditor {
    assert.ok(f.client.editor, 'the fixture has an editor');
    return f.client.editor;
}

test('the agent edits an open buffer through applyEdit; restore and undo bring it back and forth', async () => {
    const f = await serve({
        approval: 'auto',
        applyEdit: true,
        files: { 'a.py': ORIGINAL },
        steps: [
            {
                text: 'Adding a line.',
                tool_calls: [{ name: 'write_file', arguments: { path: 'a.py', content: AGENT } }],
            },
            { text: 'Done.' },
        ],
    });
    try {
        const editor = editorOf(f);
        const uri = f.uri('a.py');
        editor.open(uri, ORIGINAL, 'python');
        const { api } = f.client;
        const { sessionId } = await api.newSession();

        const result = await api.send({ sessionId, prompt: 'Add a line' });
        assert.equal(result.stopReason, 'end_turn');
        assert.equal(f.read('a.py'), AGENT, 'the disk has the agent text');
        assert.equal(editor.text(uri), AGENT, 'and so has the open buffer');
        assert.deepEqual(
            editor.applied.map((a) => [a.uri, a.label]),
            [[uri, 'agent-host: write a.py']],
        );

        const restored = await api.restore({ sessionId, seq: result.checkpoint });
        assert.deepEqual(restored.restoredFiles, ['a.py']);
        assert.deepEqual(restored.unrevertedBuffers, []);
        assert.ok(restored.removedEvents > 0);
        assert.equal(f.read('a.py'), ORIGINAL);
        assert.equal(editor.text(uri), ORIGINAL, 'the buffer is reverted');
        assert.equal(editor.applied[editor.applied.length - 1].label, 'agent-host: restore a.py');
        assert.deepEqual((await api.history({ sessionId })).messages, [], 'the conversation is rewound');

        const undone = await api.undoRestore(sessionId);
        assert.deepEqual(undone.restoredFiles, ['a.py']);
        assert.deepEqual(undone.unrevertedBuffers, []);
        assert.equal(undone.restoredEvents, restored.removedEvents);
        assert.equal(f.read('a.py'), AGENT);
        assert.equal(editor.text(uri), AGENT);
    } finally {
        await f.close();
    }
});

test("the agent reads the buffer's unsaved text; restore gives the buffer that text back", async () => {
    const f = await serve({
        approval: 'auto',
        applyEdit: true,
        files: { 'a.py': ORIGINAL },
        steps: [
            {
                text: 'Editing.',
                // only the buffer has this line: the edit works only on what the editor shows
                tool_calls: [
                    {
                        name: 'edit_file',
                        arguments: { path: 'a.py', old_string: 'print("unsaved 🙂")', new_string: 'print("agent")' },
                    },
                ],
            },
            { text: 'Done.' },
        ],
    });
    try {
        const editor = editorOf(f);
        const uri = f.uri('a.py');
        editor.open(uri, ORIGINAL, 'python');
        editor.change(uri, UNSAVED); // typed, not saved
        const { api } = f.client;
        const { sessionId } = await api.newSession();

        const result = await api.send({ sessionId, prompt: 'Replace the unsaved line' });
        const toolResult = f.events.find((e) => e.kind === 'tool_result')!.data as { isError: boolean; output: string };
        assert.equal(toolResult.isError, false, toolResult.output);
        assert.equal(f.read('a.py'), AGENT);
        assert.equal(editor.text(uri), AGENT);
        const snapshot = f.events.find((e) => e.kind === 'file_snapshot')!.data as { bufferBefore: string | null };
        assert.equal(typeof snapshot.bufferBefore, 'string', 'the unsaved text is snapshotted');

        const restored = await api.restore({ sessionId, seq: result.checkpoint });
        assert.deepEqual(restored.unrevertedBuffers, []);
        assert.equal(f.read('a.py'), ORIGINAL, 'the disk gets its saved content back');
        assert.equal(editor.text(uri), UNSAVED, 'the buffer gets its unsaved text back');
    } finally {
        await f.close();
    }
});

test('files-only and conversation-only restores; a buffer the editor refuses to change is reported', async () => {
    const f = await serve({
        approval: 'auto',
        applyEdit: true,
        files: { 'a.py': ORIGINAL },
        steps: [
            { text: '', tool_calls: [{ name: 'write_file', arguments: { path: 'a.py', content: AGENT } }] },
            { text: 'Done.' },
        ],
    });
    try {
        const editor = editorOf(f);
        const uri = f.uri('a.py');
        editor.open(uri, ORIGINAL, 'python');
        const { api } = f.client;
        const { sessionId } = await api.newSession();
        const result = await api.send({ sessionId, prompt: 'Write' });
        const turnMessages = (await api.history({ sessionId })).messages.length;

        // conversation only: the files stay as the agent left them
        const talk = await api.restore({ sessionId, seq: result.checkpoint, files: false });
        assert.deepEqual(talk.restoredFiles, []);
        assert.equal(f.read('a.py'), AGENT);
        assert.equal(editor.text(uri), AGENT);
        assert.deepEqual((await api.history({ sessionId })).messages, []);
        await api.undoRestore(sessionId);
        assert.equal((await api.history({ sessionId })).messages.length, turnMessages);

        // files only, with an editor that refuses the edit: the disk is restored and
        // the buffer is named in unrevertedBuffers
        editor.refuse = true;
        const files = await api.restore({ sessionId, seq: result.checkpoint, conversation: false });
        assert.deepEqual(files.restoredFiles, ['a.py']);
        assert.equal(files.removedEvents, 0);
        assert.equal(f.read('a.py'), ORIGINAL);
        assert.deepEqual(files.unrevertedBuffers, ['a.py']);
        assert.equal(editor.text(uri), AGENT, 'the refused buffer is as it was');
        assert.equal((await api.history({ sessionId })).messages.length, turnMessages, 'the conversation is kept');
    } finally {
        await f.close();
    }
});
