/**
 * The chat view: a webview in the Agent Host side bar that shows the current
 * session's transcript (fed by session/event) and has a prompt box.
 *
 * The page builds its DOM with textContent only (no HTML from the model or the
 * server is ever interpreted) under a strict CSP with a nonce.
 */

import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import type { Entry } from '../protocol/transcript';

export interface ChatState {
    sessionId: string | undefined;
    title: string;
    entries: Entry[];
    running: boolean;
    cost: string;
    serverState: string;
    /** The model chosen for the next prompts ('' for the default). */
    model: string;
}

export type ChatMessageFromView =
    | { type: 'send'; text: string }
    | { type: 'cancel' }
    | { type: 'command'; command: string }
    /** A changed-file line: open its diff, keep the change, or undo it (turn: its prompt's seq). */
    | { type: 'file'; action: 'open' | 'keep' | 'undo'; path: string; turn: number }
    /** A turn's Review Changes. */
    | { type: 'review'; turn: number }
    | { type: 'mention'; trigger: string }
    | { type: 'ready' };

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
    static readonly viewId = 'agentHost.chat';
    private view: vscode.WebviewView | undefined;
    private state: ChatState | undefined;
    /** A prompt to put back into the input (one that was not sent), until the page has it. */
    private unsent: string | undefined;
    /** The page has said it is ready (its script listens). */
    private pageReady = false;
    private timer: NodeJS.Timeout | undefined;
    private readonly disposables: vscode.Disposable[] = [];
    /** Settled when the page has said it is ready (and got its first render). */
    private shown: { promise: Promise<void>; resolve: () => void };

    constructor(private readonly onMessage: (message: ChatMessageFromView) => void) {
        let resolve = () => {};
        this.shown = { promise: new Promise<void>((r) => (resolve = r)), resolve: () => resolve() };
    }

    dispose(): void {
        if (this.timer) {
            clearTimeout(this.timer);
        }
        for (const d of this.disposables) {
            d.dispose();
        }
    }

    resolveWebviewView(view: vscode.WebviewView): void {
        this.view = view;
        this.pageReady = false;
        view.webview.options = { enableScripts: true, localResourceRoots: [] };
        view.webview.html = html(view.webview);
        this.disposables.push(
            view.webview.onDidReceiveMessage((message: ChatMessageFromView) => {
                if (message.type === 'ready') {
                    this.pageReady = true;
                    this.flush();
                    this.shown.resolve();
                } else {
                    this.onMessage(message);
                }
            }),
            view.onDidChangeVisibility(() => {
                if (view.visible) {
                    this.flush();
                }
            }),
            view.onDidDispose(() => {
                this.view = undefined;
            }),
        );
    }

    /** Shows the view; resolves it first if it never was. */
    async reveal(): Promise<void> {
        if (this.view) {
            this.view.show(true);
        } else {
            await vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
        }
    }

    /**
     * Reveals the view and waits (up to `timeoutMs`) for its page to be up. A modal
     * shown while the webview is still loading keeps the side bar blank until it is
     * answered, so a turn that may ask permission waits for this first.
     */
    async revealAndWait(timeoutMs: number): Promise<void> {
        await this.reveal();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([this.shown.promise, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
        clearTimeout(timer);
    }

    /** The state to show; renders are coalesced (text deltas come fast). */
    update(state: ChatState): void {
        this.state = state;
        if (this.timer === undefined) {
            this.timer = setTimeout(() => {
                this.timer = undefined;
                this.flush();
            }, 40);
        }
    }

    /** The file picked for an `@`/`#` just typed (undefined: none; the character stays). */
    insertMention(trigger: string, path: string | undefined): void {
        if (this.view) {
            this.view.show(false); // the focus back in the prompt box
            void this.view.webview.postMessage({ type: 'mention', trigger, path: path ?? null });
        }
    }

    /** Puts `text` back into the prompt box (a prompt that could not be sent). */
    restorePrompt(text: string): void {
        this.unsent = text;
        this.flush();
        this.reveal().catch(() => undefined);
    }

    private flush(): void {
        if (this.view && this.state) {
            void this.view.webview.postMessage({ type: 'render', state: this.state });
        }
        if (this.view && this.pageReady && this.unsent !== undefined) {
            const text = this.unsent;
            void this.view.webview.postMessage({ type: 'prompt', text }).then((delivered) => {
                if (delivered && this.unsent === text) {
                    this.unsent = undefined;
                }
            });
        }
    }
}

function html(webview: vscode.Webview): string {
    const nonce = crypto.randomBytes(16).toString('base64');
    const csp = [
        "default-src 'none'",
        `style-src ${webview.cspSource} 'nonce-${nonce}'`,
        `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">
  body { padding: 0 8px; font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); }
  #head { position: sticky; top: 0; background: var(--vscode-sideBar-background); padding: 6px 0; border-bottom: 1px solid var(--vscode-panel-border); display: flex; justify-content: space-between; gap: 8px; }
  #title { font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  #meta { opacity: 0.8; white-space: nowrap; }
  #log { padding-bottom: 8px; }
  .entry { margin: 8px 0; white-space: pre-wrap; word-wrap: break-word; }
  .who { font-size: 0.85em; opacity: 0.75; margin-bottom: 2px; }
  .user .body { background: var(--vscode-input-background); padding: 6px; border-radius: 4px; }
  .assistant.streaming .body::after { content: '▍'; opacity: 0.6; }
  .tool { border-left: 2px solid var(--vscode-textLink-foreground); padding-left: 6px; font-family: var(--vscode-editor-font-family); font-size: 0.9em; }
  .tool.error { border-left-color: var(--vscode-errorForeground); }
  .tool details { margin-top: 2px; }
  .tool pre { margin: 2px 0; white-space: pre-wrap; max-height: 16em; overflow: auto; }
  .file { font-style: italic; opacity: 0.85; }
  .chips { display: flex; flex-wrap: wrap; gap: 4px; margin-top: 4px; }
  .chip { font-size: 0.85em; padding: 1px 6px; border-radius: 8px; background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
  .file a { cursor: pointer; color: var(--vscode-textLink-foreground); text-decoration: none; }
  .file a:hover { text-decoration: underline; }
  .file .status { opacity: 0.75; }
  .file button, .review button { font-size: 0.85em; padding: 0 6px; margin-left: 6px; font-style: normal; }
  .file.undone a { text-decoration: line-through; }
  .info { opacity: 0.85; font-style: italic; }
  .info.warning { color: var(--vscode-editorWarning-foreground); }
  .info.error { color: var(--vscode-errorForeground); }
  #empty { opacity: 0.7; margin-top: 12px; }
  #form { position: sticky; bottom: 0; background: var(--vscode-sideBar-background); padding: 6px 0; display: flex; flex-direction: column; gap: 4px; }
  textarea { width: 100%; box-sizing: border-box; resize: vertical; min-height: 3.5em; color: var(--vscode-input-foreground); background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); font-family: inherit; font-size: inherit; }
  .buttons { display: flex; gap: 6px; }
  button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: 4px 10px; cursor: pointer; }
  button.secondary { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
  button:disabled { opacity: 0.5; cursor: default; }
</style>
</head>
<body>
<div id="head"><span id="title">Agent Host</span><span id="meta"></span></div>
<div id="log"></div>
<div id="empty">No session yet: type a prompt below, or use the buttons above to start or resume one.</div>
<div id="form">
  <textarea id="prompt" placeholder="Ask the agent (Enter sends, Shift+Enter for a new line, @ or # attaches a file)" aria-label="Prompt"></textarea>
  <div class="buttons">
    <button id="send">Send</button>
    <button id="cancel" class="secondary" disabled>Cancel</button>
  </div>
</div>
<script nonce="${nonce}">
(function () {
  const vscode = acquireVsCodeApi();
  const log = document.getElementById('log');
  const empty = document.getElementById('empty');
  const prompt = document.getElementById('prompt');
  const send = document.getElementById('send');
  const cancel = document.getElementById('cancel');
  const title = document.getElementById('title');
  const meta = document.getElementById('meta');

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function describe(e) {
    const a = e.arguments || {};
    const subject = typeof a.path === 'string' ? a.path : typeof a.command === 'string' ? a.command : typeof a.pattern === 'string' ? a.pattern : '';
    return subject ? e.name + ' ' + subject : e.name;
  }
  function render(state) {
    title.textContent = state.title;
    title.title = state.sessionId || '';
    meta.textContent = (state.model ? state.model + ' · ' : '') + state.cost + (state.serverState ? ' · ' + state.serverState : '');
    meta.title = state.model ? 'Model for the next prompts: ' + state.model : '';
    empty.style.display = state.entries.length ? 'none' : '';
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 30;
    log.replaceChildren();
    for (const e of state.entries) {
      const div = el('div', 'entry ' + e.role);
      if (e.role === 'user') {
        div.append(el('div', 'who', 'You'), el('div', 'body', e.text));
        if (e.context && e.context.length) {
          const chips = el('div', 'chips');
          for (const c of e.context) {
            const chip = el('span', 'chip', c.label);
            chip.title = c.uri || '';
            chips.append(chip);
          }
          div.append(chips);
        }
      } else if (e.role === 'assistant') {
        if (e.streaming) div.classList.add('streaming');
        div.append(el('div', 'who', 'Agent'), el('div', 'body', e.text));
      } else if (e.role === 'tool') {
        if (e.isError) div.classList.add('error');
        const status = e.output === undefined ? ' …' : e.isError ? ' ✗' : ' ✓';
        div.append(el('div', 'who', 'Tool' + status), el('div', 'body', describe(e)));
        if (e.output !== undefined && e.output !== '') {
          const details = el('details');
          details.append(el('summary', '', 'output'), el('pre', '', e.output));
          div.append(details);
        }
      } else if (e.role === 'file') {
        div.append(e.change + ': ');
        if (e.turn === undefined) {
          div.append(e.path);
        } else {
          const link = el('a', 'open', e.path);
          link.title = 'Show what the agent changed in ' + e.path;
          link.addEventListener('click', () => vscode.postMessage({ type: 'file', action: 'open', path: e.path, turn: e.turn }));
          div.append(link);
          if (e.status) {
            div.classList.add(e.status);
            div.append(el('span', 'status', ' (' + e.status + ')'));
          } else if (!state.running) {
            for (const [action, label, tip] of [['keep', 'Keep', 'Keep the change'], ['undo', 'Undo', "Undo this turn's change to this file only"]]) {
              const button = el('button', 'secondary ' + action, label);
              button.title = tip;
              button.addEventListener('click', () => vscode.postMessage({ type: 'file', action, path: e.path, turn: e.turn }));
              div.append(button);
            }
          }
        }
      } else if (e.role === 'review') {
        const button = el('button', 'secondary', 'Review Changes (' + e.files + (e.files === 1 ? ' file)' : ' files)'));
        button.title = 'Open what this turn changed in the diff editor';
        button.addEventListener('click', () => vscode.postMessage({ type: 'review', turn: e.turn }));
        div.append(button);
      } else if (e.role === 'info') {
        div.classList.add(e.level);
        div.textContent = e.text;
      }
      log.append(div);
    }
    send.disabled = state.running;
    cancel.disabled = !state.running;
    if (atBottom) window.scrollTo(0, document.body.scrollHeight);
  }
  function submit() {
    const text = prompt.value.trim();
    if (!text || send.disabled) return;
    vscode.postMessage({ type: 'send', text });
    prompt.value = '';
  }
  send.addEventListener('click', submit);
  cancel.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
  // '@' or '#' typed at a word's start: the extension asks which file (a quick pick)
  let mentionAt = -1;
  prompt.addEventListener('input', (event) => {
    const at = prompt.selectionStart - 1;
    const typed = event.data;
    if ((typed === '@' || typed === '#') && at >= 0 && prompt.value[at] === typed && (at === 0 || prompt.value[at - 1].trim() === "")) {
      mentionAt = at;
      vscode.postMessage({ type: 'mention', trigger: typed });
    }
  });
  function insertMention(trigger, path) {
    const at = mentionAt;
    mentionAt = -1;
    prompt.focus();
    if (at < 0 || prompt.value[at] !== trigger || !path) return;
    const before = prompt.value.slice(0, at + 1);
    const after = prompt.value.slice(at + 1);
    const inserted = path + (after.startsWith(' ') ? '' : ' ');
    prompt.value = before + inserted + after;
    const caret = before.length + inserted.length;
    prompt.setSelectionRange(caret, caret);
  }
  prompt.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  window.addEventListener('message', (event) => {
    if (event.data && event.data.type === 'render') render(event.data.state);
    if (event.data && event.data.type === 'mention') insertMention(event.data.trigger, event.data.path);
    if (event.data && event.data.type === 'prompt' && !prompt.value.trim()) {
      // a prompt that was not sent (the server did not start): back, to send again
      prompt.value = event.data.text;
      prompt.focus();
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
</script>
</body>
</html>`;
}
