// The extension's end-to-end suite: the packaged .vsix in code-server, driven
// through the workbench in headless Chromium, against this checkout's
// `agent-host serve` with a scripted model.
//
//   node e2e/suite.mjs CONFIG.json
//
// CONFIG (written by tests/editors/test_vscode_e2e.py): node (Node 24), codeServer
// (its entry.js), modules (where playwright-core is), chromium, vsix, agentHost
// (the executable), work (a fresh folder), artifacts (screenshots, logs), and
// optionally scenarios (the steps module: a file name in e2e/, or a path; scenarios.mjs by default).
// Prints one line per step, `ok - NAME` or `not ok - NAME: WHY`; a failed step
// ends the run (the later ones build on it).

import * as fs from 'node:fs';
import * as path from 'node:path';
import { Workbench, makeProfile, openBrowser, startCodeServer, writeSettings } from './workbench.mjs';
import { pathToFileURL } from 'node:url';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
// CONFIG.scenarios: another steps module (first-run.mjs, review.mjs), on a workbench of its own
const steps = config.scenarios ?? 'scenarios.mjs';
const { scenarios } = await import(path.isAbsolute(steps) ? pathToFileURL(steps).href : `./${steps}`);
fs.mkdirSync(config.artifacts, { recursive: true });

const project = path.join(config.work, 'project');
const store = path.join(config.work, 'store');
fs.mkdirSync(project, { recursive: true });
fs.writeFileSync(path.join(project, 'greet.py'), 'def greet(name):\n    return f"Hi, {name}!"\n');
fs.writeFileSync(path.join(project, 'notes.md'), '# notes\n');

const profile = makeProfile(config, path.join(config.work, 'profile'));
const baseSettings = {
    'files.autoSave': 'off',
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'telemetry.telemetryLevel': 'off',
    'security.workspace.trust.enabled': false,
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
    'git.enabled': false,
    'editor.minimap.enabled': false,
    'window.dialogStyle': 'custom',
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'agentHost.approval': 'ask',
};

const ctx = {
    config,
    project,
    store,
    profile,
    baseSettings,
    file: (name) => path.join(project, name),
    read: (name) => fs.readFileSync(path.join(project, name), 'utf8'),
    write: (name, text) => fs.writeFileSync(path.join(project, name), text),
    /** Sets the scripted model's steps (read by the server at each start). */
    script(steps) {
        const file = path.join(config.work, `script-${++ctx.scripts}.json`);
        fs.writeFileSync(file, JSON.stringify({ steps }));
        return `scripted:${file}`;
    },
    scripts: 0,
    settingsFile: (scope) => path.join(profile.userData, scope, 'settings.json'),
    /** The User settings file, before the window opens. */
    userSettings(settings) {
        writeSettings(profile, 'User', settings);
    },
    wb: undefined,
    server: undefined,
    browser: undefined,
};

let failed = false;
const started = Date.now();
try {
    ctx.server = await startCodeServer(config, profile, path.join(config.artifacts, 'code-server.log'));
    ctx.browser = await openBrowser(config);
    ctx.openWorkbench = async () => {
        ctx.wb = await Workbench.open(ctx.browser.context, ctx.server.url, project, config.artifacts);
        return ctx.wb;
    };
    for (const [name, run] of scenarios) {
        const t0 = Date.now();
        try {
            await run(ctx);
            console.log(`ok - ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
        } catch (err) {
            failed = true;
            console.log(`not ok - ${name}: ${String(err && err.stack ? err.stack : err).replace(/\n/g, '\n#   ')}`);
            try {
                await ctx.wb?.shot(`FAILED ${name}`);
            } catch {
                // the page may be gone
            }
            break;
        }
    }
} catch (err) {
    failed = true;
    console.log(`not ok - setup: ${String(err && err.stack ? err.stack : err).replace(/\n/g, '\n#   ')}`);
} finally {
    // the extension's output channel, as the extension host logged it
    for (const found of fs.readdirSync(profile.userData, { recursive: true })) {
        if (String(found).endsWith('Agent Host.log')) {
            fs.copyFileSync(path.join(profile.userData, String(found)), path.join(config.artifacts, `output-${path.basename(path.dirname(String(found)))}.log`));
        }
    }
    await ctx.browser?.browser.close().catch(() => undefined);
    ctx.server?.stop();
    console.log(`# ${((Date.now() - started) / 1000).toFixed(1)} s; artifacts in ${config.artifacts}`);
}
process.exit(failed ? 1 : 0);
