/**
 * The review wire of issue 25 (session/changes, the restore preview,
 * session/revertFiles), written by hand from the lead's contract until the
 * generated wire.generated.ts has them; then this file goes and types.ts gives
 * the same names.
 */

import type { CheckpointInfo, RestoreParams, RestoreResult } from './wire.generated';

export const CHANGES = 'session/changes';
export const REVERT_FILES = 'session/revertFiles';

export interface FileDiff {
    /** Workspace-relative, "/"-separated. */
    path: string;
    action: 'added' | 'modified' | 'deleted' | 'renamed';
    oldPath?: string | null;
    binary: boolean;
    /** Unified diff ("" if binary). */
    diff: string;
    added: number;
    removed: number;
    /** The whole text before (null: binary, absent, or over 1 MiB). */
    before?: string | null;
    after?: string | null;
    source?: 'edit' | 'command' | 'mcp' | 'mixed';
}

export interface PreviewFile extends FileDiff {
    /** The user changed the file since the agent last did. */
    conflict: boolean;
    /** The agent's last text -> the disk now: what the restore would discard. */
    userDiff?: string | null;
    agentText?: string | null;
}

export interface ChangesParams {
    sessionId: string;
    seq?: number;
    fromSeq?: number;
    toSeq?: number;
}

export interface ChangesResult {
    files: FileDiff[];
}

export interface RestorePreview {
    files: PreviewFile[];
    messagesRemoved: number;
    checkpoint: CheckpointInfo;
}

export interface RestorePreviewParams extends RestoreParams {
    dryRun?: boolean;
    paths?: string[];
}

export interface RestorePreviewResult extends RestoreResult {
    preview?: RestorePreview;
}

export interface RevertFilesParams {
    sessionId: string;
    seq: number;
    paths: string[];
    force?: boolean;
    dryRun?: boolean;
}
