/**
 * The server's work-done progress ($/progress around session/send and
 * session/compact) shown as a notification with a Cancel button.
 *
 * vscode-languageclient answers window/workDoneProgress/create and would show
 * the progress in the status bar, whose cancel sends window/workDoneProgress/cancel
 * (which does not stop a turn, see docs/protocol.md). Through the client's
 * `handleWorkDoneProgress` middleware this shows it as a notification instead, and
 * its Cancel runs `onCancel` (session/cancel for a turn).
 */

import * as vscode from 'vscode';
import type {
    HandleWorkDoneProgressSignature,
    ProgressToken,
    WorkDoneProgressBegin,
    WorkDoneProgressEnd,
    WorkDoneProgressReport,
} from 'vscode-languageclient/node';

type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

interface Shown {
    report?: (value: { message?: string; increment?: number }) => void;
    resolve?: () => void;
    reported: number;
    ended: boolean;
}

export class NotificationProgress implements vscode.Disposable {
    private readonly shown = new Map<ProgressToken, Shown>();

    /** `onBegin` ties a token to what it is the progress of; `onCancel` cancels it. */
    constructor(
        private readonly onBegin: (token: ProgressToken, title: string | undefined) => void,
        private readonly onCancel: (token: ProgressToken) => void,
    ) {}

    /** The languageclient middleware. `next` (the status-bar progress) runs only for
     * `end`, so the client's own bookkeeping is cleaned up. */
    readonly middleware = (
        token: ProgressToken,
        value: ProgressValue,
        next: HandleWorkDoneProgressSignature,
    ): void => {
        switch (value.kind) {
            case 'begin':
                this.begin(token, value);
                break;
            case 'report':
                this.report(token, value);
                break;
            case 'end':
                this.end(token);
                next(token, value);
                break;
        }
    };

    private begin(token: ProgressToken, value: WorkDoneProgressBegin): void {
        const entry: Shown = { reported: 0, ended: false };
        this.shown.set(token, entry);
        this.onBegin(token, value.title);
        void vscode.window.withProgress(
            {
                location: vscode.ProgressLocation.Notification,
                title: value.title ?? 'Agent Host',
                cancellable: value.cancellable !== false,
            },
            (progress, cancellation) =>
                new Promise<void>((resolve) => {
                    if (entry.ended) {
                        resolve();
                        return;
                    }
                    entry.report = (v) => progress.report(v);
                    entry.resolve = resolve;
                    cancellation.onCancellationRequested(() => {
                        // the notification closes at once; the request ends when the turn has
                        this.onCancel(token);
                    });
                    if (value.message) {
                        progress.report({ message: value.message });
                    }
                }),
        );
    }

    private report(token: ProgressToken, value: WorkDoneProgressReport): void {
        const entry = this.shown.get(token);
        if (!entry?.report) {
            return;
        }
        if (typeof value.percentage === 'number') {
            const increment = Math.max(0, Math.min(value.percentage, 100) - entry.reported);
            entry.reported += increment;
            entry.report({ message: value.message, increment });
        } else if (value.message) {
            entry.report({ message: value.message });
        }
    }

    private end(token: ProgressToken): void {
        const entry = this.shown.get(token);
        this.shown.delete(token);
        if (entry) {
            entry.ended = true;
            entry.resolve?.();
        }
    }

    dispose(): void {
        for (const token of [...this.shown.keys()]) {
            this.end(token);
        }
    }
}
