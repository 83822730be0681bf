/**
 * The quick pick of a session's checkpoints (one per prompt, newest first),
 * shared by Show Checkpoints, Restore Checkpoint… and Fork Session… (which adds
 * an item for the whole conversation).
 */

import * as vscode from 'vscode';
import { checkpointDetail, checkpointLabel } from '../protocol/restoreText';
import type { CheckpointInfo } from '../protocol/types';
import type { UiContext } from './uiContext';

/** The item standing for "no checkpoint: all of it". */
export const WHOLE = 'whole';

export interface PickOptions {
    title: string;
    placeHolder: string;
    /** An item before the checkpoints that picks WHOLE (Fork Session…'s "Whole
     * conversation"); with it the list is shown even when there are no checkpoints. */
    whole?: { label: string; detail: string };
}

/** A checkpoint of `sessionId`, WHOLE, or undefined when dismissed (or when there is
 * nothing to pick: no checkpoints and no `whole` item). */
export async function pickCheckpoint(
    ui: UiContext,
    sessionId: string,
    options: PickOptions,
): Promise<CheckpointInfo | typeof WHOLE | undefined> {
    const api = await ui.server.ensureStarted();
    const { checkpoints } = await api.checkpoints(sessionId);
    if (!checkpoints.length && !options.whole) {
        void vscode.window.showInformationMessage('Agent Host: this session has no checkpoints yet (one per prompt).');
        return undefined;
    }
    type Item = vscode.QuickPickItem & { checkpoint: CheckpointInfo | typeof WHOLE };
    const items: Item[] = checkpoints.map((c, i) => ({
        label: checkpointLabel(c, i + 1),
        description: new Date(c.createdAt).toLocaleString(),
        detail: checkpointDetail(c),
        checkpoint: c,
    }));
    items.reverse(); // newest first
    if (options.whole) {
        items.unshift({ label: options.whole.label, detail: options.whole.detail, checkpoint: WHOLE, alwaysShow: true });
    }
    const picked = await vscode.window.showQuickPick(items, {
        title: options.title,
        placeHolder: options.placeHolder,
        matchOnDescription: true,
        matchOnDetail: true,
    });
    return picked?.checkpoint;
}
