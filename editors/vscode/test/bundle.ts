/** Loading the bundled extension (dist/extension.js, what the .vsix ships) on a
 * stand-in `vscode` module (fakeVscode.ts), and the ExtensionContext it is given. */

import * as path from 'node:path';
import Module from 'node:module';

export const HERE = path.resolve(__dirname, '..', '..');
export const BUNDLE = path.join(HERE, 'dist', 'extension.js');

export interface Loaded {
    activate(context: unknown): unknown;
    deactivate(): Promise<void>;
}

/** Loads the bundle with `require('vscode')` answered by `fake`. */
export function loadBundle(fake: unknown): Loaded {
    const mod = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
    const original = mod._load;
    mod._load = function (request: string, parent: unknown, isMain: boolean) {
        if (request === 'vscode') {
            return fake;
        }
        return original.call(this, request, parent, isMain);
    };
    try {
        delete require.cache[BUNDLE];
        return require(BUNDLE) as Loaded;
    } finally {
        mod._load = original;
    }
}

/** An ExtensionContext: subscriptions and in-memory workspace/global state. */
export function context(): unknown {
    const state = new Map<string, unknown>();
    const memento = {
        get: (key: string, fallback?: unknown) => (state.has(key) ? state.get(key) : fallback),
        update: async (key: string, value: unknown) => void state.set(key, value),
        keys: () => [...state.keys()],
    };
    return { subscriptions: [], workspaceState: memento, globalState: memento, extensionPath: HERE };
}
