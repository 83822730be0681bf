// The real workbench, driven: code-server started on a fresh profile with the
// packaged .vsix installed, Debian's Chromium opened on it by playwright-core, and
// the few gestures the suite needs (palette, quick input, modal, tabs, editor,
// webview, notifications). Only the page is driven; nothing inside the editor is
// reached around.

import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { createRequire } from 'node:module';

export const CHROMIUM_ARGS = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(check, what, timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    let last;
    for (;;) {
        try {
            const value = await check();
            if (value !== undefined && value !== false && value !== null) {
                return value;
            }
        } catch (err) {
            last = err;
        }
        if (Date.now() > deadline) {
            throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (${last.message})` : ''}`);
        }
        await sleep(100);
    }
}

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        });
        server.on('error', reject);
    });
}

/** The profile: user data (User and Machine settings), extensions, the .vsix installed. */
export function makeProfile(config, dir) {
    const profile = {
        userData: path.join(dir, 'user-data'),
        extensions: path.join(dir, 'extensions'),
    };
    fs.mkdirSync(path.join(profile.userData, 'User'), { recursive: true });
    fs.mkdirSync(path.join(profile.userData, 'Machine'), { recursive: true });
    const done = spawnSync(
        config.node,
        [config.codeServer, '--user-data-dir', profile.userData, '--extensions-dir', profile.extensions, '--install-extension', config.vsix],
        { encoding: 'utf8', timeout: 120_000 },
    );
    if (done.status !== 0 || !/successfully installed/i.test(done.stdout + done.stderr)) {
        throw new Error(`--install-extension failed (${done.status}):\n${done.stdout}\n${done.stderr}`);
    }
    return profile;
}

export function writeSettings(profile, scope, settings) {
    const file = path.join(profile.userData, scope, 'settings.json');
    fs.writeFileSync(file, JSON.stringify(settings, null, 2));
}

/** code-server on 127.0.0.1, no auth, on `profile`. */
export async function startCodeServer(config, profile, logFile) {
    const port = await freePort();
    const log = fs.openSync(logFile, 'a');
    const child = spawn(
        config.node,
        [
            config.codeServer,
            '--auth', 'none',
            '--bind-addr', `127.0.0.1:${port}`,
            '--user-data-dir', profile.userData,
            '--extensions-dir', profile.extensions,
            '--disable-telemetry',
            '--disable-update-check',
            '--disable-workspace-trust',
            '--disable-getting-started-override',
        ],
        { stdio: ['ignore', log, log], env: { ...process.env, NODE_OPTIONS: '' } },
    );
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, 'code-server to listen', 60_000);
    return { child, url, stop: () => child.kill('SIGTERM') };
}

export async function openBrowser(config) {
    const require = createRequire(path.join(config.modules, 'noop.js'));
    const { chromium } = require('playwright-core');
    const browser = await chromium.launch({ executablePath: config.chromium, args: CHROMIUM_ARGS, headless: true });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    return { browser, context };
}

/** One workbench page, with the gestures the suite uses. */
export class Workbench {
    constructor(page, artifacts) {
        this.page = page;
        this.artifacts = artifacts;
        this.shots = 0;
    }

    static async open(context, url, folder, artifacts) {
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
        const page = await context.newPage();
        const wb = new Workbench(page, artifacts);
        await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`);
        await wb.ready();
        return wb;
    }

    async ready() {
        await this.page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
        await this.page.locator('.statusbar').waitFor({ timeout: 60_000 });
        await sleep(500);
    }

    async reload() {
        await this.page.reload();
        await this.ready();
    }

    async shot(name) {
        this.shots += 1;
        const file = path.join(this.artifacts, `${String(this.shots).padStart(2, '0')}-${name.replace(/[^a-z0-9]+/gi, '-')}.png`);
        await this.page.screenshot({ path: file });
        return file;
    }

    /** Runs a palette command by its title ("Agent Host: Send Prompt"). */
    async command(title) {
        const input = this.page.locator('.quick-input-widget input');
        // the palette lists what is registered when it opens: until the extension
        // host has read the extension, open it again
        await waitFor(async () => {
            if (await input.isVisible()) {
                await this.page.keyboard.press('Escape'); // not otherwise: it would clear the selection
            }
            await this.page.keyboard.press('F1');
            await input.waitFor({ state: 'visible', timeout: 5000 });
            await input.fill(`>${title}`);
            const row = this.page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
            await row.waitFor({ state: 'visible', timeout: 2000 });
            return true;
        }, `the command ${title}`, 40_000);
        await sleep(150);
        await input.press('Enter');
        // the palette gives way (to the command's own input, or to nothing)
        await waitFor(async () => !(await input.isVisible()) || !(await input.inputValue()).startsWith('>'), `${title} to run`);
    }

    /** Types into the open quick input (an input box) and accepts. */
    async answerInput(text) {
        const input = this.page.locator('.quick-input-widget input');
        await input.waitFor({ state: 'visible' });
        await input.fill(text);
        await sleep(100);
        await input.press('Enter');
    }

    /** Picks the quick pick row whose label contains `text`. */
    async pick(text) {
        const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
        await row.waitFor({ state: 'visible' });
        await row.click();
    }

    async quickPickRows() {
        await this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row').first().waitFor({ state: 'visible' });
        return this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row').allInnerTexts();
    }

    /** The modal dialog's text, once it is up. */
    async modal(timeoutMs = 30_000) {
        const dialog = this.page.locator('.monaco-dialog-box');
        await dialog.waitFor({ state: 'visible', timeout: timeoutMs });
        return dialog.innerText();
    }

    async answerModal(button) {
        const dialog = this.page.locator('.monaco-dialog-box');
        await dialog.getByRole('button', { name: button, exact: true }).click();
        await dialog.waitFor({ state: 'hidden' });
    }

    async openFile(relative) {
        if (await this.page.locator('.quick-input-widget input').isVisible()) {
            await this.page.keyboard.press('Escape');
        }
        await this.page.keyboard.press('Control+P');
        const input = this.page.locator('.quick-input-widget input');
        await input.waitFor({ state: 'visible' });
        await input.fill(relative);
        await this.page.locator('.quick-input-list .monaco-list-row', { hasText: path.basename(relative) }).first().waitFor();
        await sleep(200);
        await input.press('Enter');
        await this.tab(path.basename(relative)).waitFor();
        await this.focusEditor();
    }

    tab(name) {
        return this.page.locator('.tabs-container .tab', { hasText: name }).first();
    }

    async isDirty(name) {
        return (await this.tab(name).getAttribute('class')).split(/\s+/).includes('dirty');
    }

    async focusEditor() {
        await this.page.locator('.editor-group-container.active .editor-instance .monaco-editor .view-lines').first().click({ position: { x: 400, y: 200 }, force: true });
    }

    /** The active editor's text, as rendered (the test files fit on screen). */
    async editorText() {
        const lines = await this.page.locator('.editor-group-container.active .editor-instance .monaco-editor .view-lines .view-line').evaluateAll((nodes) =>
            nodes
                .map((n) => ({ top: parseFloat(n.style.top || '0'), text: n.textContent.replace(/\u00a0/g, ' ') }))
                .sort((a, b) => a.top - b.top)
                .map((l) => l.text),
        );
        return lines.join('\n');
    }

    /**
     * Replaces a settings file (`file`, "User" or "Remote") through its editor, as a
     * user would: a file written behind code-server's back is not always noticed.
     */
    async editSettings(which, file, settings) {
        await this.command(which === 'User' ? 'Preferences: Open User Settings (JSON)' : 'Preferences: Open Remote Settings (JSON)');
        const text = JSON.stringify(settings, null, 2);
        await waitFor(async () => {
            // the editor (a modal one in 1.139) has the focus once it is open
            const focused = await this.page.evaluate(() => document.activeElement?.closest('.monaco-editor') !== null);
            return focused && (await this.page.locator('.monaco-editor .view-line', { hasText: '{' }).count()) > 0;
        }, `the ${which} settings editor`);
        await sleep(300);
        // pasted, not typed: typing would auto-close brackets and indent
        await this.page.evaluate((t) => navigator.clipboard.writeText(t), text);
        await this.page.keyboard.press('Control+A');
        await this.page.keyboard.press('Control+V');
        await this.page.keyboard.press('Control+S');
        const saved = () => {
            try {
                return JSON.stringify(JSON.parse(fs.readFileSync(file, 'utf8'))) === JSON.stringify(settings);
            } catch {
                return false;
            }
        };
        await waitFor(saved, `${file} saved`);
        await sleep(300);
        await this.page.keyboard.press('Control+S'); // what was typed after the first save
        await sleep(300);
        await this.page.keyboard.press('Control+W');
        const ask = this.page.locator('.monaco-dialog-box', { hasText: 'save the changes' });
        if (await ask.isVisible({ timeout: 1000 }).catch(() => false)) {
            await ask.getByRole('button', { name: 'Save', exact: true }).click();
        }
        await waitFor(saved, `${file} still as saved`);
        await sleep(300);
    }

    async press(keys) {
        await this.page.keyboard.press(keys);
    }

    async type(text) {
        await this.page.keyboard.type(text);
    }

    /** Every notification toast's text (the center closed). */
    async toasts() {
        return this.page.locator('.notifications-toasts .notification-toast').allInnerTexts();
    }

    /** Clicks `button` on the toast that says `text` (toasts re-render: retried). */
    async toastButton(text, button, timeoutMs = 20_000) {
        const toast = this.page.locator('.notifications-toasts .notification-toast', { hasText: text });
        await waitFor(async () => {
            await toast.getByRole('button', { name: button, exact: true }).click({ timeout: 2000 });
            return true;
        }, `${button} on the toast "${text}"`, timeoutMs);
    }

    async clearToasts() {
        await this.command('Notifications: Clear All Notifications');
        await sleep(200);
    }

    async statusBar() {
        return (await this.page.locator('.statusbar').innerText()).replace(/\s+/g, ' ');
    }

    /** The chat webview's inner frame (resolving the view if needed). */
    async chatFrame(timeoutMs = 20_000) {
        return waitFor(
            async () => {
                for (const frame of this.page.frames()) {
                    if ((await frame.locator('#prompt').count().catch(() => 0)) > 0 && (await frame.locator('#log').count()) > 0) {
                        return frame;
                    }
                }
                return undefined;
            },
            'the chat view',
            timeoutMs,
        );
    }

    async chatText() {
        const frame = await this.chatFrame();
        // textContent, not innerText: a modal makes the workbench behind it inert
        return frame.locator('body').evaluate((body) => {
            const parts = [];
            for (const node of body.querySelectorAll('#head, .entry, #empty')) {
                if (node.id !== 'empty' || node.style.display !== 'none') {
                    parts.push(node.textContent);
                }
            }
            return parts.join('\n');
        });
    }
}
