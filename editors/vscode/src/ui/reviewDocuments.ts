/**
 * The read-only texts the review diffs show (agent-host-review:/PATH?ID-SIDE):
 * a file before and after a turn, what a restore would write, the agent's last
 * text. Each review gets a fresh ID, so a document VS Code keeps open never
 * shows an older review's text; the oldest reviews are let go.
 */

import * as vscode from 'vscode';

export const REVIEW_SCHEME = 'agent-host-review';

/** Reviews whose texts are kept (the diffs still open are among the last ones). */
const KEPT_REVIEWS = 20;

export class ReviewDocuments implements vscode.TextDocumentContentProvider {
    private readonly docs = new Map<string, string>();
    private readonly reviews: string[][] = [];
    private counter = 0;

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.docs.get(uri.toString()) ?? '';
    }

    /** A new review: `add(side, path, text)` gives the URI of each of its texts. */
    begin(): (side: string, path: string, text: string) => vscode.Uri {
        const id = ++this.counter;
        const uris: string[] = [];
        this.reviews.push(uris);
        for (const old of this.reviews.splice(0, Math.max(0, this.reviews.length - KEPT_REVIEWS))) {
            for (const uri of old) {
                this.docs.delete(uri);
            }
        }
        return (side, path, text) => {
            // the sides differ in the query only: VS Code's changes editor takes a
            // different path for a rename
            const uri = vscode.Uri.from({ scheme: REVIEW_SCHEME, path: `/${path.replace(/^\/+/, '')}`, query: `${id}-${side}` });
            this.docs.set(uri.toString(), text);
            uris.push(uri.toString());
            return uri;
        };
    }
}
