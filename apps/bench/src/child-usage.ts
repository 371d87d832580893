/**
 * The wall time and peak resident memory of a child process, and how it ended. With GNU time
 * (`/usr/bin/time -f '%e %M'`, its figures in a file of their own so they never mix with the
 * child's stderr) when the machine has it; otherwise the wall time as the parent saw it and the
 * peak memory the child reports of itself (`reportsOwnUsage`: a Node child loads a module that
 * writes `process.resourceUsage()` on exit, see {@link usageReporter}).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';

/** GNU time, where Linux distributions install it. */
export const GNU_TIME = '/usr/bin/time';
/** Environment variable naming the file a self-reporting Node child writes its usage to. */
export const USAGE_FILE_ENV = 'ALLOT_USAGE_FILE';
/** Bytes of the child's stderr kept, from its end. */
const STDERR_TAIL = 8192;

/** How a child ran. */
export interface ChildUsage {
  /** Exit status; 128 + n when signal n ended it; null when it could not start. */
  readonly exitCode: number | null;
  /** Wall-clock seconds. */
  readonly seconds: number;
  /** Peak resident set in bytes, null when nothing measured it. */
  readonly peakRssBytes: number | null;
  /** The last non-empty line the child wrote to stderr (why it failed, when it did). */
  readonly lastStderrLine: string;
  /** What it wrote to stdout (kept whole: the callers' children print a line or two). */
  readonly stdout: string;
}

/** Options of {@link measureChild}. */
export interface MeasureOptions {
  readonly cwd: string;
  /** Killed past this many ms (SIGKILL). */
  readonly timeoutMs: number;
  /** Measure with GNU time (default: when the machine has it). */
  readonly gnuTime?: boolean;
  /** Where a self-reporting child writes its usage (when GNU time is not used). */
  readonly usageFile?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** Writes a module that makes a Node child (`node --require FILE ...`) report its own usage. */
export function usageReporter(folder: string): string {
  const path = join(folder, 'report-usage.cjs');
  writeFileSync(
    path,
    [
      "'use strict';",
      `const file = process.env.${USAGE_FILE_ENV};`,
      "if (file) process.on('exit', () => {",
      "  require('node:fs').writeFileSync(file, JSON.stringify(process.resourceUsage()));",
      '});',
      '',
    ].join('\n'),
  );
  return path;
}

/** The last non-empty line of `text` (lines end at \n or \r, as progress lines do). */
export function lastLine(text: string): string {
  const lines = text.split(/[\r\n]+/).filter((line) => line.trim() !== '');
  return lines.at(-1)?.trim() ?? '';
}

/** Runs `command args` and measures it; never throws for the child's sake. */
export function measureChild(
  command: string,
  args: readonly string[],
  options: MeasureOptions,
): Promise<ChildUsage> {
  const gnuTime = options.gnuTime ?? existsSync(GNU_TIME);
  const timeFile = join(options.cwd, `.time-${process.pid}-${Date.now()}`);
  const argv = gnuTime ? ['-f', '%e %M', '-o', timeFile, command, ...args] : [...args];
  const env = { ...process.env, ...options.env };
  if (!gnuTime && options.usageFile !== undefined) env[USAGE_FILE_ENV] = options.usageFile;
  const started = performance.now();
  return new Promise((resolve) => {
    // A process group of its own, so that a timeout ends the measured child too, not only time.
    const child = spawn(gnuTime ? GNU_TIME : command, argv, {
      cwd: options.cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, options.timeoutMs);
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (data: Buffer) => {
      stdout += data.toString();
    });
    child.stderr.on('data', (data: Buffer) => {
      stderr = (stderr + data.toString()).slice(-STDERR_TAIL);
    });
    const finish = (exitCode: number | null, note: string) => {
      clearTimeout(timer);
      const wall = (performance.now() - started) / 1000;
      const figures = gnuTime ? readGnuTime(timeFile) : null;
      const own = gnuTime ? null : readOwnUsage(options.usageFile);
      resolve({
        exitCode,
        seconds: figures?.seconds ?? wall,
        peakRssBytes: figures?.peakRssBytes ?? own,
        lastStderrLine: note || lastLine(stderr),
        stdout,
      });
    };
    child.on('error', (error) => finish(null, error.message));
    child.on('close', (code, signal) => {
      const status = signal === null ? code : 128 + (constants.signals[signal] ?? 0);
      finish(status, timedOut ? `killed after ${options.timeoutMs / 1000} s` : '');
    });
  });
}

/** GNU time's `%e %M` (seconds, KiB), the last line of its file; null when missing. */
function readGnuTime(path: string): { seconds: number; peakRssBytes: number } | null {
  try {
    const match = /(\d+(?:\.\d+)?) (\d+)\s*$/.exec(readFileSync(path, 'utf8'));
    if (match === null) return null;
    return { seconds: Number(match[1]), peakRssBytes: Number(match[2]) * 1024 };
  } catch {
    return null;
  } finally {
    rmSync(path, { force: true });
  }
}

/** `maxRSS` (KiB) from the usage a self-reporting child wrote; null when it wrote none. */
function readOwnUsage(path: string | undefined): number | null {
  if (path === undefined) return null;
  try {
    const usage = JSON.parse(readFileSync(path, 'utf8')) as { maxRSS?: number };
    return typeof usage.maxRSS === 'number' ? usage.maxRSS * 1024 : null;
  } catch {
    return null;
  } finally {
    rmSync(path, { force: true });
  }
}
