/** The review's pure parts: changed lines, preview rows and choice, diff sides, and
 * the chat's file lines (one per file and turn, with Review Changes after the turn). */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { changedLines } from '../src/protocol/lineDiff';
import {
    countsText,
    diffSides,
    previewRows,
    previewSummary,
    restoreChoice,
} from '../src/protocol/reviewText';
import type { FileDiff, PreviewFile, RestorePreview } from '../src/protocol/types';
import { Transcript, toMarkdown } from '../src/protocol/transcript';
import type { SessionEvent } from '../src/protocol/types';

describe('changed lines', () => {
    test('an edit in the middle marks only its lines', () => {
        const before = 'a\nb\nc\nd\ne\n';
        assert.deepEqual(changedLines(before, 'a\nB\nc\nd\ne\n'), [{ start: 1, end: 2 }]);
        assert.deepEqual(changedLines(before, 'a\nb\nc\nx\ny\nd\ne\n'), [{ start: 3, end: 5 }]);
    });

    test('two separate edits are two spans, not everything between', () => {
        const before = ['one', 'two', 'three', 'four', 'five', 'six'].join('\n');
        const after = ['ONE', 'two', 'three', 'four', 'five', 'SIX', 'seven'].join('\n');
        assert.deepEqual(changedLines(before, after), [
            { start: 0, end: 1 },
            { start: 5, end: 7 },
        ]);
    });

    test('lines only removed, or no change, mark nothing; a new file is all new', () => {
        assert.deepEqual(changedLines('a\nb\nc', 'a\nc'), []);
        assert.deepEqual(changedLines('same', 'same'), []);
        assert.deepEqual(changedLines('', 'x\ny'), [{ start: 0, end: 2 }]);
    });

    test('CRLF and LF lines compare by their text', () => {
        assert.deepEqual(changedLines('a\r\nb\r\n', 'a\r\nc\r\n'), [{ start: 1, end: 2 }]);
    });
});

const file = (over: Partial<PreviewFile>): PreviewFile => ({
    path: 'greet.py',
    action: 'modified',
    oldPath: null,
    binary: false,
    diff: '',
    added: 2,
    removed: 1,
    before: 'old\n',
    after: 'new\n',
    source: 'edit',
    conflict: false,
    userDiff: null,
    agentText: null,
    ...over,
});

const preview = (files: PreviewFile[], messagesRemoved = 4): RestorePreview => ({
    files,
    messagesRemoved,
    checkpoint: { seq: 7, prompt: 'add a test\nand more', createdAt: '2026-01-01T00:00:00Z', files: [] },
});

describe('the restore preview', () => {
    test('one row per file: action, counts; conflicts unticked and named', () => {
        const rows = previewRows(
            preview([
                file({}),
                file({ path: 'new.txt', action: 'added', added: 3, removed: 0 }),
                file({ path: 'notes.md', conflict: true, userDiff: '-a\n+b\n', agentText: 'a\n' }),
                file({ path: 'logo.png', action: 'deleted', binary: true }),
            ]),
        );
        assert.deepEqual(
            rows.map((r) => [r.label, r.description, r.picked]),
            [
                ['$(diff-modified) greet.py', 'will be changed · +2 −1', true],
                ['$(diff-added) new.txt', 'will be created · +3 −0', true],
                ['$(warning) notes.md', 'will be changed · +2 −1', false],
                ['$(diff-removed) logo.png', 'will be deleted · binary', true],
            ],
        );
        assert.match(rows[2].detail ?? '', /you changed it since the agent/i);
        assert.equal(rows[0].detail, undefined);
    });

    test('the summary counts files, conflicts and messages in words', () => {
        assert.equal(previewSummary(preview([file({}), file({ path: 'b', conflict: true })])), '2 files · 1 conflict · 4 messages removed');
        assert.equal(previewSummary(preview([file({})], 1)), '1 file · 1 message removed');
    });

    test('the choice is the ticked paths; force only when a ticked one is a conflict', () => {
        const p = preview([file({}), file({ path: 'b.py' }), file({ path: 'c.py', conflict: true })]);
        assert.deepEqual(restoreChoice(p, ['b.py']), { paths: ['b.py'], force: false });
        assert.deepEqual(restoreChoice(p, ['greet.py', 'c.py']), { paths: ['greet.py', 'c.py'], force: true });
        assert.deepEqual(restoreChoice(p, []), { paths: [], force: false });
    });
});

describe('diff sides', () => {
    test('an added file has no before, a deleted one no after; binary and large are named', () => {
        const f = (over: Partial<FileDiff>): FileDiff => ({ ...file({}), ...over });
        assert.deepEqual(diffSides(f({ action: 'added', before: null, after: 'x' })), { before: undefined, after: 'x' });
        assert.deepEqual(diffSides(f({ action: 'deleted', before: 'x', after: null })), { before: 'x', after: undefined });
        assert.deepEqual(diffSides(f({ binary: true, before: null, after: null })), {
            before: '(binary file: not shown)',
            after: '(binary file: not shown)',
        });
        assert.match(diffSides(f({ before: null })).before ?? '', /over 1 MiB/);
        assert.equal(countsText(f({ binary: true })), 'binary');
    });

});

describe("the chat's changed-file lines", () => {
    const ev = (kind: string, data: Record<string, unknown>): SessionEvent => ({ sessionId: 's', kind, data });
    const snapshot = (seq: number, path: string, before: string | null, after: string | null) =>
        ev('file_snapshot', { seq, ts: 0, type: 'file_snapshot', path, before, after, bufferBefore: null, jump: false });

    test('one line per file and turn, with the turn; Review Changes after a turn that changed files', () => {
        const t = new Transcript('s');
        t.apply(ev('user_prompt', { seq: 1, ts: 0, type: 'user_prompt', text: 'go' }));
        t.apply(snapshot(2, 'a.py', null, 'b1'));
        t.apply(snapshot(3, 'a.py', 'b1', 'b2'));
        t.apply(snapshot(4, 'b.py', 'b0', 'b3'));
        t.apply(ev('turn_end', { seq: 5, ts: 0, type: 'turn_end', stopReason: 'end_turn' }));
        t.apply(ev('user_prompt', { seq: 6, ts: 0, type: 'user_prompt', text: 'just talk' }));
        t.apply(ev('turn_end', { seq: 7, ts: 0, type: 'turn_end', stopReason: 'end_turn' }));
        const files = t.entries.filter((e) => e.role === 'file');
        assert.deepEqual(
            files.map((e) => e.role === 'file' && [e.change, e.path, e.turn]),
            [
                ['created', 'a.py', 1],
                ['modified', 'b.py', 1],
            ],
        );
        assert.deepEqual(
            t.entries.filter((e) => e.role === 'review'),
            [{ role: 'review', turn: 1, files: 2 }],
        );
        t.markFile(1, 'b.py', 'undone');
        assert.equal(t.fileEntry(1, 'b.py')?.status, 'undone');
        assert.match(toMarkdown('x', t.entries), /\*modified: b\.py \(undone\)\*/);
    });

    test('a resumed session links its files to their checkpoints too', () => {
        const t = Transcript.fromHistory(
            's',
            [
                { role: 'user', content: 'go' },
                { role: 'assistant', content: 'done' },
            ],
            [{ seq: 4, prompt: 'go', createdAt: '', files: ['a.py'] }],
        );
        assert.deepEqual(
            t.entries.filter((e) => e.role === 'file' || e.role === 'review'),
            [
                { role: 'file', path: 'a.py', change: 'modified', turn: 4 },
                { role: 'review', turn: 4, files: 1 },
            ],
        );
    });
});
