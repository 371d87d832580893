/**
 * What the bench's two command lines (`cli.ts`, `raw-cli.ts`) share: the repository root, a
 * one-line progress display, writing the results, and the exit status.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, platform, release } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { UsageError } from './options';
import type { RunInfo } from './results';

/** The repository root: the nearest folder above `from` that holds pnpm-workspace.yaml. */
export function findRepoRoot(from = process.cwd()): string {
  let dir = resolve(from);
  for (;;) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return resolve(from);
    dir = parent;
  }
}

/** What a run records of itself: `command`, today, Node, the CPU and the platform. */
export function runInfo(command: string): RunInfo {
  return {
    command,
    date: new Date().toISOString().slice(0, 10),
    node: process.version,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    platform: `${platform()} ${release()}`,
  };
}

/** A one-line progress display on a terminal; silent elsewhere. */
export class Progress {
  private readonly tty = process.stderr.isTTY === true;
  private readonly started = performance.now();

  update(text: string): void {
    if (!this.tty) return;
    const seconds = ((performance.now() - this.started) / 1000).toFixed(0);
    const line = `[${seconds}s] ${text}`;
    const width = process.stderr.columns ?? 100;
    process.stderr.write(`\r\x1b[2K${line.slice(0, width - 1)}`);
  }

  log(text: string): void {
    if (this.tty) process.stderr.write('\r\x1b[2K');
    process.stderr.write(`${text}\n`);
  }

  clear(): void {
    if (this.tty) process.stderr.write('\r\x1b[2K');
  }
}

/**
 * Writes `results` to `bench-results/<jsonName>` (ignored by git) and `BENCHMARKS.md`, whose new
 * text `merge` makes from the existing one (null when there is none), at the repository root.
 * Returns the two paths.
 */
export function writeResults(
  jsonName: string,
  results: object,
  merge: (existing: string | null) => string,
): string[] {
  const root = findRepoRoot();
  const jsonPath = join(root, 'bench-results', jsonName);
  mkdirSync(dirname(jsonPath), { recursive: true });
  writeFileSync(jsonPath, `${JSON.stringify(results, null, 2)}\n`);
  const mdPath = join(root, 'BENCHMARKS.md');
  writeFileSync(mdPath, merge(existsSync(mdPath) ? readFileSync(mdPath, 'utf8') : null));
  return [jsonPath, mdPath];
}

/** Runs a script's `main` with the process's arguments: its exit status, or 2 after `name: error`. */
export function runScript(name: string, main: (argv: string[]) => Promise<number>): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`${name}: ${(error as Error).message}\n`);
      process.exitCode = 2;
    },
  );
}

/**
 * Runs `main` with the process's arguments and sets the exit status: its own, 2 with the usage
 * after a bad command line, 1 after any other error.
 */
export function runMain(main: (argv: string[]) => Promise<number>, usage: string): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      if (error instanceof UsageError) {
        process.stderr.write(`${error.message}\n\n${usage}`);
        process.exitCode = 2;
      } else {
        process.stderr.write(
          `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
        );
        process.exitCode = 1;
      }
    },
  );
}
