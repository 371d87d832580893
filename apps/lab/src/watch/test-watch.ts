/** Helpers of the tests that run `allot-lab watch` while a generated job's dumps land. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { lab } from '../lab';
import { Capture } from '../test-capture';

/** The folders made, removed when the test file is done (a job's dumps take tens of MB). */
const made: string[] = [];
afterAll(() => {
  for (const folder of made) rmSync(folder, { recursive: true, force: true });
});

/** A new empty folder for a job's dumps. */
export function jobFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'allot-watch-'));
  made.push(folder);
  return folder;
}

/** Waits until `ready()` holds, looking every 20 ms; fails after `seconds` saying what it waited for. */
export async function until(ready: () => boolean, what: string, seconds = 120): Promise<void> {
  const deadline = performance.now() + seconds * 1000;
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`waited ${seconds} s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `allot-lab ARGV` in this process, to the end. */
export async function runLab(argv: readonly string[], cwd?: string) {
  const stdout = new Capture();
  const stderr = new Capture();
  const status = await lab(argv, { stdout, stderr, ...(cwd !== undefined ? { cwd } : {}) });
  return { status, stdout: stdout.text, stderr: stderr.text };
}

/** `allot-lab watch FOLDER` started in this process; `stop()` interrupts it as Ctrl-C does. */
export function startWatch(folder: string, more: readonly string[] = []) {
  const stdout = new Capture();
  const stderr = new Capture();
  const abort = new AbortController();
  const status = lab(['watch', folder, '--interval', '0.05', ...more], {
    stdout,
    stderr,
    signal: abort.signal,
  });
  return {
    stdout,
    stderr,
    stop: () => {
      abort.abort();
      return status;
    },
  };
}

/** The JSON objects of `watch --json`'s output, one per line. */
export function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
