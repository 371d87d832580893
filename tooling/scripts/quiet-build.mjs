#!/usr/bin/env node
/**
 * Builds a workspace package and what it depends on, silently: turbo's banner, its task summary
 * and its telemetry notice stay out of the way of the command that runs next (`pnpm lab` prints
 * only the lab's output). On failure everything turbo printed goes to stderr, with its exit status.
 *
 * Usage: node tooling/scripts/quiet-build.mjs PACKAGE
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: quiet-build.mjs PACKAGE (a workspace package name)\n');
  process.exit(2);
}
const turbo = join(root, 'node_modules', 'turbo', 'bin', 'turbo');
const result = spawnSync(
  process.execPath,
  [turbo, 'run', 'build', `--filter=${target}...`, '--output-logs=errors-only'],
  {
    cwd: root,
    encoding: 'utf8',
    env: {
      ...process.env,
      TURBO_TELEMETRY_DISABLED: '1',
      DO_NOT_TRACK: '1',
      TURBO_NO_UPDATE_NOTIFIER: '1',
      TURBO_PRINT_VERSION_DISABLED: '1',
    },
  },
);
if (result.error) {
  process.stderr.write(`quiet-build: cannot run turbo: ${result.error.message}\n`);
  process.exit(1);
}
if (result.status !== 0) {
  process.stderr.write(result.stdout ?? '');
  process.stderr.write(result.stderr ?? '');
  process.stderr.write(`quiet-build: building ${target} failed (exit status ${result.status})\n`);
  process.exit(result.status ?? 1);
}
