/**
 * A stand-in for the `vscode` module, enough to activate the bundled extension
 * (dist/extension.js) in plain Node and drive its commands: commands, config,
 * a workspace folder, content providers, webview views, and scripted answers to
 * the UI (input boxes, quick picks, modal messages). Anything not modelled is a
 * "universal" no-op: callable, constructible, every property another no-op.
 *
 * No editor build is downloaded or run: this checks the bundle's wiring and its
 * talk with the real server, not VS Code's rendering.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

type Fn = (...args: any[]) => any;

/** A no-op that is callable, constructible and has any property. */
export function universal(name = 'vscode'): any {
    const cache = new Map<PropertyKey, unknown>();
    const target = function () {
        /* no-op */
    };
    return new Proxy(target, {
        get(_t, prop) {
            if (prop === 'then') {
                return undefined; // not a thenable
            }
            if (prop === Symbol.toPrimitive) {
                return () => `[${name}]`;
            }
            if (prop === Symbol.iterator) {
                return function* () {
                    /* empty */
                };
            }
            if (prop === 'dispose') {
                return () => undefined;
            }
            if (!cache.has(prop)) {
                cache.set(prop, universal(`${name}.${String(prop)}`));
            }
            return cache.get(prop);
        },
        apply() {
            return universal(`${name}()`);
        },
        construct() {
            return universal(`new ${name}`);
        },
    });
}

/** Layers `real` over a universal: known members are real, the rest no-ops. */
function partial<T extends object>(name: string, real: T): T & Record<string, any> {
    const rest = universal(name);
    return new Proxy(real as any, {
        get(t, prop) {
            return prop in t ? t[prop] : rest[prop];
        },
    });
}

export class Disposable {
    constructor(private readonly fn: () => void = () => undefined) {}
    static from(...items: { dispose(): unknown }[]): Disposable {
        return new Disposable(() => items.forEach((i) => i.dispose()));
    }
    dispose(): void {
        this.fn();
    }
}

export class EventEmitter<T> {
    private listeners = new Set<(e: T) => void>();
    readonly event = (listener: (e: T) => void) => {
        this.listeners.add(listener);
        return new Disposable(() => this.listeners.delete(listener));
    };
    fire(e: T): void {
        for (const l of [...this.listeners]) {
            l(e);
        }
    }
    dispose(): void {
        this.listeners.clear();
    }
}

export class CancellationTokenSource {
    private readonly emitter = new EventEmitter<void>();
    readonly token = {
        isCancellationRequested: false,
        onCancellationRequested: this.emitter.event,
    };
    cancel(): void {
        if (!this.token.isCancellationRequested) {
            this.token.isCancellationRequested = true;
            this.emitter.fire();
        }
    }
    dispose(): void {
        this.emitter.dispose();
    }
}

export class Uri {
    private constructor(
        readonly scheme: string,
        readonly authority: string,
        readonly path: string,
        readonly query: string,
        readonly fragment: string,
    ) {}
    static file(p: string): Uri {
        return new Uri('file', '', pathToFileURL(p).pathname, '', '');
    }
    static parse(value: string): Uri {
        const u = new URL(value);
        return new Uri(u.protocol.replace(/:$/, ''), u.host, decodeURIComponent(u.pathname), u.search.replace(/^\?/, ''), u.hash.replace(/^#/, ''));
    }
    static from(c: { scheme: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
        return new Uri(c.scheme, c.authority ?? '', c.path ?? '', c.query ?? '', c.fragment ?? '');
    }
    static joinPath(base: Uri, ...parts: string[]): Uri {
        return base.with({ path: path.posix.join(base.path, ...parts) });
    }
    get fsPath(): string {
        return fileURLToPath(`file://${this.path}`);
    }
    with(c: { scheme?: string; path?: string; query?: string; fragment?: string }): Uri {
        return new Uri(c.scheme ?? this.scheme, this.authority, c.path ?? this.path, c.query ?? this.query, c.fragment ?? this.fragment);
    }
    toString(): string {
        if (this.scheme === 'file') {
            return pathToFileURL(this.fsPath).href;
        }
        const q = this.query ? `?${this.query}` : '';
        const f = this.fragment ? `#${this.fragment}` : '';
        return `${this.scheme}://${this.authority}${this.path.split('/').map(encodeURIComponent).join('/')}${q}${f}`;
    }
    toJSON(): unknown {
        return { scheme: this.scheme, path: this.path };
    }
}

class ThemeIcon {
    constructor(readonly id: string) {}
}
class ThemeColor {
    constructor(readonly id: string) {}
}
class TabInputText {
    constructor(readonly uri: Uri) {}
}
class TabInputTextDiff {
    constructor(
        readonly original: Uri,
        readonly modified: Uri,
    ) {}
}

/** What a test scripts and observes. */
export interface FakeUi {
    config: Record<string, unknown>;
    commands: Map<string, Fn>;
    /** executeCommand calls of commands the extension did not register (vscode.diff, setContext…). */
    executed: { command: string; args: unknown[] }[];
    contentProviders: Map<string, { provideTextDocumentContent(uri: Uri): string }>;
    viewProviders: Map<string, any>;
    statusBar: { text: string; tooltip: string };
    output: string[];
    messages: { level: string; message: string; options?: unknown; items: unknown[] }[];
    /** Answers for showInputBox, in order. */
    inputs: (string | undefined)[];
    /** Pickers for showQuickPick: given the items, return the one to pick. */
    picks: ((items: any[]) => any)[];
    /** Answers for modal/non-modal messages: given the message and items, return one. */
    answer: (message: string, items: any[]) => any;
    /** QuickPicks made with createQuickPick, once shown. */
    quickPicks: FakeQuickPick[];
}

export interface FakeQuickPick {
    items: any[];
    selectedItems: any[];
    busy: boolean;
    title?: string;
    /** What the user does: pick `item` and press Enter. */
    accept(item: any): void;
    /** Press Enter on a many-item pick: its ticked items (selectedItems) are chosen. */
    acceptSelection(): void;
    hide(): void;
}

export function createFakeVscode(root: string): { vscode: any; ui: FakeUi } {
    const ui: FakeUi = {
        config: {},
        commands: new Map(),
        executed: [],
        contentProviders: new Map(),
        viewProviders: new Map(),
        statusBar: { text: '', tooltip: '' },
        output: [],
        messages: [],
        inputs: [],
        picks: [],
        answer: () => undefined,
        quickPicks: [],
    };
    const message =
        (level: string) =>
        async (msg: string, ...rest: any[]) => {
            const options = rest.length && typeof rest[0] === 'object' && rest[0] !== null && !('title' in rest[0]) ? rest.shift() : undefined;
            ui.messages.push({ level, message: msg, options, items: rest });
            return ui.answer(msg, rest);
        };
    const outputChannel = (name: string) =>
        partial(`OutputChannel(${name})`, {
            name,
            append: (s: string) => ui.output.push(s),
            appendLine: (s: string) => ui.output.push(s),
            replace: () => undefined,
            clear: () => undefined,
            show: () => undefined,
            hide: () => undefined,
            dispose: () => undefined,
        });
    const folder = { uri: Uri.file(root), name: path.basename(root), index: 0 };

    const vscode = {
        version: '1.82.0',
        Uri,
        Disposable,
        EventEmitter,
        CancellationTokenSource,
        ThemeIcon,
        ThemeColor,
        OverviewRulerLane: { Left: 1, Center: 2, Right: 4, Full: 7 },
        TabInputText,
        TabInputTextDiff,
        StatusBarAlignment: { Left: 1, Right: 2 },
        FileType: { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 },
        ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
        ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
        env: partial('env', { appName: 'Fake Code', language: 'en', openExternal: async () => true }),
        commands: partial('commands', {
            registerCommand: (id: string, fn: Fn) => {
                if (ui.commands.has(id)) {
                    throw new Error(`command ${id} already registered`);
                }
                ui.commands.set(id, fn);
                return new Disposable(() => ui.commands.delete(id));
            },
            executeCommand: async (id: string, ...args: unknown[]) => {
                const fn = ui.commands.get(id);
                if (fn) {
                    return fn(...args);
                }
                ui.executed.push({ command: id, args });
                return undefined;
            },
        }),
        window: partial('window', {
            createOutputChannel: outputChannel,
            createStatusBarItem: () =>
                partial('StatusBarItem', {
                    set text(v: string) {
                        ui.statusBar.text = v;
                    },
                    get text() {
                        return ui.statusBar.text;
                    },
                    set tooltip(v: string) {
                        ui.statusBar.tooltip = v;
                    },
                    get tooltip() {
                        return ui.statusBar.tooltip;
                    },
                    command: undefined as unknown,
                    show: () => undefined,
                    hide: () => undefined,
                    dispose: () => undefined,
                }),
            registerWebviewViewProvider: (id: string, provider: unknown) => {
                ui.viewProviders.set(id, provider);
                return new Disposable(() => ui.viewProviders.delete(id));
            },
            showInformationMessage: message('info'),
            showWarningMessage: message('warning'),
            showErrorMessage: message('error'),
            setStatusBarMessage: () => new Disposable(),
            showInputBox: async () => ui.inputs.shift(),
            showQuickPick: async (items: any) => {
                const pick = ui.picks.shift();
                const list = await items;
                return pick ? pick(list) : undefined;
            },
            createQuickPick: () => {
                const accepted = new EventEmitter<void>();
                const hidden = new EventEmitter<void>();
                const button = new EventEmitter<unknown>();
                const picker: FakeQuickPick & Record<string, unknown> = {
                    items: [],
                    selectedItems: [],
                    busy: false,
                    onDidAccept: accepted.event,
                    onDidHide: hidden.event,
                    onDidTriggerItemButton: button.event,
                    onDidTriggerButton: new EventEmitter<unknown>().event,
                    onDidChangeValue: new EventEmitter<string>().event,
                    onDidChangeSelection: new EventEmitter<unknown>().event,
                    show: () => void ui.quickPicks.push(picker),
                    hide: () => hidden.fire(),
                    dispose: () => undefined,
                    accept: (item: any) => {
                        picker.selectedItems = [item];
                        accepted.fire();
                    },
                    acceptSelection: () => accepted.fire(),
                };
                return picker;
            },
            withProgress: async (_options: unknown, task: Fn) => task({ report: () => undefined }, new CancellationTokenSource().token),
            showTextDocument: async (doc: unknown) => ({ document: doc }),
            activeTextEditor: undefined,
            visibleTextEditors: [],
            tabGroups: partial('tabGroups', { all: [], close: async () => true }),
        }),
        workspace: partial('workspace', {
            workspaceFolders: [folder],
            textDocuments: [],
            getWorkspaceFolder: () => folder,
            getConfiguration: (section?: string) =>
                partial('WorkspaceConfiguration', {
                    get: (key: string, fallback?: unknown) => {
                        const full = section ? `${section}.${key}` : key;
                        return full in ui.config ? ui.config[full] : fallback;
                    },
                    has: (key: string) => (section ? `${section}.${key}` : key) in ui.config,
                    inspect: () => undefined,
                    update: async (key: string, value: unknown) => {
                        ui.config[section ? `${section}.${key}` : key] = value;
                    },
                }),
            registerTextDocumentContentProvider: (scheme: string, provider: any) => {
                ui.contentProviders.set(scheme, provider);
                return new Disposable(() => ui.contentProviders.delete(scheme));
            },
            openTextDocument: async (uri: Uri) => {
                const provider = ui.contentProviders.get(uri.scheme);
                const text = provider ? provider.provideTextDocumentContent(uri) : fs.readFileSync(uri.fsPath, 'utf8');
                return partial('TextDocument', { uri, getText: () => text });
            },
            fs: partial('fs', {
                readFile: async (uri: Uri) => new Uint8Array(fs.readFileSync(uri.fsPath)),
                stat: async (uri: Uri) => {
                    const st = fs.statSync(uri.fsPath);
                    return { type: st.isFile() ? 1 : st.isDirectory() ? 2 : 0, size: st.size, ctime: st.ctimeMs, mtime: st.mtimeMs };
                },
            }),
        }),
        languages: universal('languages'),
    };
    return { vscode: partial('vscode', vscode), ui };
}

/** A WebviewView that records what the extension posts to it. */
export function fakeWebviewView(): { view: any; posted: any[]; send(message: unknown): void } {
    const posted: any[] = [];
    const fromView = new EventEmitter<unknown>();
    const webview = partial('Webview', {
        options: {},
        html: '',
        cspSource: 'vscode-resource:',
        postMessage: async (m: unknown) => {
            // A copy, as a real webview gets it (serialized when posted): the render's
            // entries are the transcript's own array, which later events change.
            posted.push(structuredClone(m));
            return true;
        },
        onDidReceiveMessage: fromView.event,
    });
    const view = partial('WebviewView', {
        webview,
        visible: true,
        show: () => undefined,
        onDidChangeVisibility: new EventEmitter<void>().event,
        onDidDispose: new EventEmitter<void>().event,
    });
    return { view, posted, send: (m) => fromView.fire(m) };
}
