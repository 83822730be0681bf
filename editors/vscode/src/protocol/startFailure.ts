/**
 * Why `agent-host serve` did not start, in one sentence a user can act on, and the
 * pip command that would fix it: told apart from what the start left behind (the
 * spawn error, the exit code, the last lines of stderr, the initialize answer).
 *
 * No `vscode` import here: the UI shows it (ui/startFailure.ts).
 */

import type { ServerCommand } from './server';

export type StartFailureCause =
    /** The command is not there (or not executable). */
    | 'missing-executable'
    /** A Python interpreter without the agent_host module. */
    | 'missing-module'
    /** The process ended before initialize answered (a crash, a bad argument). */
    | 'exited'
    /** It answered initialize, but not as agent-host does. */
    | 'not-agent-host'
    /** agent-host, of a protocol version this extension does not speak. */
    | 'wrong-version'
    /** initialize failed, or took too long, with the process still there. */
    | 'initialize-failed';

/** What a failed start left behind. */
export interface StartEvidence {
    command: ServerCommand;
    /** The spawn's error code (ENOENT, EACCES), if the process never ran. */
    spawnError?: string;
    /** The exit code (or signal) if the process ended. */
    exitCode?: number | null;
    signal?: string | null;
    /** The last of what it wrote to stderr. */
    stderr?: string;
    /** The error the client reported (initialize's rejection). */
    error?: string;
    /** initialize's `experimental.agentHost`, if it answered. */
    info?: { protocolVersion?: number; version?: string } | null;
    /** The protocol version this extension speaks. */
    expectedProtocol?: number;
}

/** A start that failed, named: thrown by the UI's server start, shown once. */
export class StartFailure extends Error {
    constructor(
        readonly reason: StartFailureCause,
        message: string,
        /** What would install (or update) agent-host where it is looked for. */
        readonly installCommand: string,
        readonly command: ServerCommand,
    ) {
        super(message);
        this.name = 'StartFailure';
    }
}

const NO_MODULE = /No module named '?agent_host'?/;

function commandText(command: ServerCommand): string {
    return [command.command, ...command.args].join(' ');
}

/** Whether the command runs a Python interpreter with `-m agent_host`. */
function isPythonCommand(command: ServerCommand): boolean {
    return command.args[0] === '-m' && command.args[1] === 'agent_host';
}

/** A shell word: quoted only when it needs to be. */
function shellWord(word: string): string {
    return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The pip command that installs agent-host for `command` (`upgrade`: a newer one). */
export function installCommand(command: ServerCommand, upgrade = false, platform: NodeJS.Platform = process.platform): string {
    const python = isPythonCommand(command) ? command.command : platform === 'win32' ? 'python' : 'python3';
    return `${shellWord(python)} -m pip install ${upgrade ? '--upgrade ' : ''}agent-host`;
}

/** The last non-empty line of `text` that says something (not a traceback frame). */
function lastLine(text: string | undefined): string {
    const lines = (text ?? '')
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter((l) => l && !/^(File "|Traceback|\^+$)/.test(l));
    const line = lines[lines.length - 1] ?? '';
    return line.length > 200 ? `${line.slice(0, 197)}…` : line;
}

/** The one failure a start's evidence shows, most specific first. */
export function classifyStartFailure(e: StartEvidence, platform: NodeJS.Platform = process.platform): StartFailure {
    const shown = `\`${commandText(e.command)}\``;
    const make = (cause: StartFailureCause, message: string, upgrade = false) =>
        new StartFailure(cause, message, installCommand(e.command, upgrade, platform), e.command);
    if (e.spawnError === 'ENOENT' || e.spawnError === 'EACCES' || e.spawnError === 'ENOTDIR') {
        const what = isPythonCommand(e.command) ? 'Python interpreter' : 'agent-host executable';
        const why = e.spawnError === 'EACCES' ? 'is not executable' : 'was not found';
        return make('missing-executable', `the ${what} \`${e.command.command}\` ${why}, so ${shown} cannot start.`);
    }
    if (NO_MODULE.test(e.stderr ?? '')) {
        return make('missing-module', `\`${e.command.command}\` has no agent_host module (No module named agent_host), so ${shown} cannot start.`);
    }
    if (e.info !== undefined && e.info !== null && e.expectedProtocol !== undefined && e.info.protocolVersion !== e.expectedProtocol) {
        const newer = (e.info.protocolVersion ?? 0) < e.expectedProtocol;
        return make(
            'wrong-version',
            `${shown} is agent-host ${e.info.version ?? '(version unknown)'}, speaking protocol ${e.info.protocolVersion ?? '(none)'}; ` +
                `this extension speaks protocol ${e.expectedProtocol}. ${newer ? 'Install a newer agent-host' : 'Update the extension'} or point agentHost.serverPath at a matching one.`,
            newer,
        );
    }
    if (e.info === null) {
        return make('not-agent-host', `${shown} answered, but not as agent-host serve does (no agent-host capabilities): agentHost.serverPath names another program.`);
    }
    if (e.exitCode !== undefined || e.signal) {
        const how = e.signal ? `was killed by ${e.signal}` : `exited with code ${e.exitCode}`;
        const said = lastLine(e.stderr);
        return make('exited', `${shown} ${how} while starting${said ? `: ${said}` : ''}.`);
    }
    const said = lastLine(e.stderr);
    if (said) {
        // gone (or stuck) without a known exit: what it said is the best cause there is
        return make('exited', `${shown} stopped while starting: ${said}.`);
    }
    return make('initialize-failed', `${shown} did not complete initialize${e.error ? ` (${e.error})` : ''}.`);
}
