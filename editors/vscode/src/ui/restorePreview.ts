/**
 * The restore preview: before anything is written, a quick pick of what the
 * restore would do (session/restore with dryRun) — each file with its action
 * and +/− counts, ticked to be restored; conflicts (files the user changed since
 * the agent did) unticked and named, with Compare (the agent's last text against
 * the disk: what ticking it would discard). Show (per file) and Review All open
 * the diffs of what would be written. Accepting restores the ticked files only.
 */

import * as vscode from 'vscode';
import { checkpointLabel } from '../protocol/restoreText';
import { previewRows, previewSummary, restoreChoice, reviewTitle } from '../protocol/reviewText';
import type { PreviewFile, RestorePreview } from '../protocol/types';
import type { CheckpointInfo, RestoreParams } from '../protocol/types';
import { baseName, showChanges, showConflict, showFileDiff } from './diffViews';
import type { ReviewDocuments } from './reviewDocuments';
import type { UiContext } from './uiContext';

export interface RestoreChoice {
    paths: string[];
    force: boolean;
}

type Item = vscode.QuickPickItem & { file: PreviewFile };

const SHOW: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('diff'), tooltip: 'Show what the restore writes' };
const COMPARE: vscode.QuickInputButton = {
    iconPath: new vscode.ThemeIcon('warning'),
    tooltip: 'Compare: your change since the agent, which ticking discards',
};
const REVIEW_ALL: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('diff-multiple'), tooltip: 'Review All in the changes editor' };

/**
 * The files to restore, chosen on the preview; undefined when dismissed. A preview
 * without files (nothing would change on disk) needs no choice: no paths.
 */
export async function chooseRestoreFiles(
    ui: UiContext,
    docs: ReviewDocuments,
    params: RestoreParams,
    checkpoint: CheckpointInfo,
): Promise<RestoreChoice | undefined> {
    const api = await ui.server.ensureStarted();
    const preview = await api.restorePreview(params);
    ui.log(`${params.sessionId} restore preview ${params.seq}: ${JSON.stringify({ ...preview, files: preview.files.map(({ path, action, added, removed, conflict }) => ({ path, action, added, removed, conflict })) })}`);
    if (!preview.files.length) {
        return { paths: [], force: false };
    }
    const name = checkpointLabel(preview.checkpoint ?? checkpoint);
    return pick(docs, preview, name);
}

function pick(docs: ReviewDocuments, preview: RestorePreview, name: string): Promise<RestoreChoice | undefined> {
    const qp = vscode.window.createQuickPick<Item>();
    const rows = previewRows(preview);
    const items: Item[] = rows.map((row, i) => ({
        label: row.label,
        description: row.description,
        detail: row.detail,
        picked: row.picked,
        file: preview.files[i],
        buttons: row.conflict ? [COMPARE, SHOW] : [SHOW],
    }));
    qp.title = `Restore to ${name}: ${previewSummary(preview)}`;
    qp.placeholder = 'Untick files to leave them as they are; Enter restores the ticked ones';
    qp.canSelectMany = true;
    qp.ignoreFocusOut = true;
    qp.matchOnDescription = true;
    qp.items = items;
    qp.selectedItems = items.filter((i) => i.picked);
    qp.buttons = [REVIEW_ALL];
    const showOptions = { preview: true, preserveFocus: true };
    return new Promise<RestoreChoice | undefined>((resolve) => {
        let settled = false;
        const finish = (choice: RestoreChoice | undefined) => {
            if (!settled) {
                settled = true;
                resolve(choice);
                qp.dispose();
            }
        };
        qp.onDidTriggerItemButton(({ button, item }) => {
            const f = item.file;
            const run =
                button === COMPARE
                    ? typeof f.agentText === 'string'
                        ? showConflict(docs, f.path, f.agentText, `${baseName(f.path)}: the agent's last text ↔ yours (ticking discards yours)`, showOptions)
                        : vscode.window.showInformationMessage(`Agent Host: your change to ${f.path}:\n${f.userDiff ?? '(binary: not shown)'}`)
                    : showFileDiff(docs, f, `${baseName(f.path)}: now ↔ after the restore to ${name}`, showOptions);
            void Promise.resolve(run).then(undefined, (err) => void vscode.window.showErrorMessage(`Agent Host: ${String(err)}`));
        });
        qp.onDidTriggerButton(() => {
            void showChanges(docs, preview.files, reviewTitle(`restore to ${name}: now ↔ after`)).then(
                undefined,
                (err) => void vscode.window.showErrorMessage(`Agent Host: ${String(err)}`),
            );
        });
        qp.onDidAccept(() => finish(restoreChoice(preview, qp.selectedItems.map((i) => i.file.path))));
        qp.onDidHide(() => finish(undefined));
        qp.show();
    });
}
