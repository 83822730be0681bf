/**
 * Which lines of a text are new against an older version of it: the lines an
 * agent's edit wrote, for the brief highlight in open editors. A longest common
 * subsequence over the lines between the common head and tail; past a size cap
 * the whole differing middle counts as changed (a highlight, not a patch).
 */

/** Lines `start` (inclusive) to `end` (exclusive), 0-based, of the newer text. */
export interface LineSpan {
    start: number;
    end: number;
}

/** Cells of the LCS table beyond which the middle is taken as changed whole. */
const MAX_CELLS = 4_000_000;

export function splitLines(text: string): string[] {
    return text.split(/\r\n|\r|\n/);
}

/** The spans of `after`'s lines that are not in `before` (inserted or rewritten). */
export function changedLines(before: string, after: string): LineSpan[] {
    if (before === after) {
        return [];
    }
    const a = splitLines(before);
    const b = splitLines(after);
    let head = 0;
    while (head < a.length && head < b.length && a[head] === b[head]) {
        head++;
    }
    let tail = 0;
    while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) {
        tail++;
    }
    const oldMid = a.slice(head, a.length - tail);
    const newMid = b.slice(head, b.length - tail);
    if (!newMid.length) {
        return []; // lines were only removed
    }
    if (!oldMid.length || oldMid.length * newMid.length > MAX_CELLS) {
        return [{ start: head, end: head + newMid.length }];
    }
    const kept = commonLines(oldMid, newMid);
    const spans: LineSpan[] = [];
    for (let j = 0; j < newMid.length; j++) {
        if (kept[j]) {
            continue;
        }
        const last = spans[spans.length - 1];
        if (last && last.end === head + j) {
            last.end++;
        } else {
            spans.push({ start: head + j, end: head + j + 1 });
        }
    }
    return spans;
}

/** For each line of `b`, whether a longest common subsequence with `a` keeps it. */
function commonLines(a: readonly string[], b: readonly string[]): boolean[] {
    const n = a.length;
    const m = b.length;
    // lengths[i][j]: LCS length of a[i..] and b[j..], one row of m + 1 per i
    const lengths = new Uint32Array((n + 1) * (m + 1));
    const at = (i: number, j: number) => i * (m + 1) + j;
    for (let i = n - 1; i >= 0; i--) {
        for (let j = m - 1; j >= 0; j--) {
            lengths[at(i, j)] =
                a[i] === b[j] ? lengths[at(i + 1, j + 1)] + 1 : Math.max(lengths[at(i + 1, j)], lengths[at(i, j + 1)]);
        }
    }
    const kept = new Array<boolean>(m).fill(false);
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
        if (a[i] === b[j]) {
            kept[j] = true;
            i++;
            j++;
        } else if (lengths[at(i + 1, j)] >= lengths[at(i, j + 1)]) {
            i++;
        } else {
            j++;
        }
    }
    return kept;
}
