/**
 * `allot-lab record [options] -- CMD ARGS...`: runs the command unchanged, with the Python recorder
 * (python/bootstrap) first on PYTHONPATH, so every Python process it starts dumps its rank's
 * snapshots into the folder; then says in one line what was recorded, and exits as the command did.
 *
 * ```
 *  --out checked (a folder, writable, holding no snapshots) ─► one line: where the files go
 *  spawn CMD (stdio inherited, the environment plus the recorder's) ─► SIGINT, SIGTERM, SIGHUP
 *        forwarded as signals.ts says ─► the command exits
 *  status records (a temporary folder) ─► summary.ts: one line ─► exit: the command's status,
 *        128 + n when a signal n ended it, 127 when the command is not found, 126 when it cannot run
 * ```
 */
import { spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileErrorMeaning } from '../failure';
import { isTraceName } from '../job/rank-name';
import { UsageError } from '../options';
import { formatCount } from '../units';
import { bootstrapFolder, type RecordOptions, recordEnvironment } from './settings';
import { FORWARDED, forwards, inTerminalForeground } from './signals';
import { parseStatus, type StatusRecord, summaryLine } from './summary';

/** Where record writes its own lines (the command writes to the process's own streams). */
export interface RecordIo {
  readonly stderr: NodeJS.WritableStream;
  /** @defaultValue process.cwd() */
  readonly cwd?: string;
}

/** The exit status of a command that is not found, and of one that cannot be run, as shells say. */
export const EXIT_NOT_FOUND = 127;
export const EXIT_CANNOT_RUN = 126;

/** How the command ended. */
type Outcome =
  | { readonly code: number | null; readonly signal: NodeJS.Signals | null }
  | { readonly error: NodeJS.ErrnoException };

/** Makes `out` a writable folder that holds no snapshots yet. @throws UsageError */
function prepareOut(out: string, given: string): void {
  const probe = join(out, `.allot-lab-record-${process.pid}`);
  try {
    if (statSync(out, { throwIfNoEntry: false })?.isDirectory() === false) {
      throw new UsageError(
        `--out ${given}: a file of that name is in the way (record needs a folder)`,
      );
    }
    mkdirSync(out, { recursive: true });
    writeFileSync(probe, '');
    unlinkSync(probe);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const meaning = fileErrorMeaning(error) ?? (error as Error).message;
    throw new UsageError(`--out ${given}: cannot write snapshots there: ${meaning}`);
  }
  const held = readdirSync(out).filter(isTraceName).sort();
  if (held.length > 0) {
    const shown = held.slice(0, 3).join(', ') + (held.length > 3 ? ', ...' : '');
    throw new UsageError(
      `--out ${given} already holds ${formatCount(held.length)} snapshots (${shown}): replay and tune ` +
        "would read them as this run's; name another --out, or empty it",
    );
  }
}

/** The first line: where the snapshots go, and when they are written. */
function startLine(out: string, options: RecordOptions): string {
  const { everySteps, everySeconds } = options;
  const when = [
    everySteps === null ? '' : `every ${formatCount(everySteps)} optimizer steps`,
    everySeconds === null ? '' : `every ${formatCount(everySeconds)} s at an optimizer step`,
  ].filter((text) => text !== '');
  const stacks = { python: 'Python stacks', all: 'Python and C++ stacks', none: 'no stacks' }[
    options.stacks
  ];
  return (
    `allot-lab record: snapshots of every rank go to ${out} (${[...when, 'at exit'].join(', ')} ` +
    `and at an out-of-memory error; the newest ${formatCount(options.maxEntries)} allocator ` +
    `events per device, ${stacks})\n`
  );
}

/** Runs the command, forwarding signals to it, until it exits (or cannot start). */
function run(command: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Outcome> {
  return new Promise((done) => {
    const child = spawn(command[0]!, command.slice(1), { cwd, env, stdio: 'inherit' });
    const handlers = FORWARDED.map((signal) => {
      const handler = () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        if (forwards(signal, inTerminalForeground())) child.kill(signal);
      };
      process.on(signal, handler);
      return { signal, handler };
    });
    const finish = (outcome: Outcome) => {
      for (const { signal, handler } of handlers) process.off(signal, handler);
      done(outcome);
    };
    child.once('error', (error) => finish({ error }));
    child.once('exit', (code, signal) => finish({ code, signal }));
  });
}

/** Every status record the job's processes wrote. */
function statusRecords(folder: string): StatusRecord[] {
  return readdirSync(folder)
    .filter((name) => name.endsWith('.jsonl'))
    .flatMap((name) => parseStatus(readFileSync(join(folder, name), 'utf8')));
}

/** Runs `record` (see the module comment); returns the exit status. @throws UsageError */
export async function recordCommand(options: RecordOptions, io: RecordIo): Promise<number> {
  const cwd = io.cwd ?? process.cwd();
  const out = resolve(cwd, options.out);
  prepareOut(out, options.out);
  const bootstrap = bootstrapFolder();
  if (bootstrap === null) {
    throw new Error("the recorder's Python files (python/bootstrap) are missing from allot-lab");
  }
  const status = mkdtempSync(join(tmpdir(), 'allot-lab-record-'));
  try {
    io.stderr.write(startLine(out, options));
    const env = recordEnvironment(options, { out, status, bootstrap }, process.env);
    const outcome = await run(options.command, env, cwd);
    if ('error' in outcome) {
      const missing = outcome.error.code === 'ENOENT';
      io.stderr.write(
        `allot-lab record: cannot run ${options.command[0]}: ${
          missing
            ? 'no such command (not found on PATH)'
            : (fileErrorMeaning(outcome.error) ?? outcome.error.message)
        }\n`,
      );
      return missing ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
    }
    io.stderr.write(`allot-lab record: ${summaryLine(statusRecords(status), out)}\n`);
    if (outcome.signal !== null) return 128 + (constants.signals[outcome.signal] ?? 0);
    return outcome.code ?? 0;
  } finally {
    rmSync(status, { recursive: true, force: true });
  }
}
