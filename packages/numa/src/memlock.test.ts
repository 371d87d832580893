/**
 * The memlock error, for real: a child process runs under `prlimit --memlock=64 KiB` and, when this
 * process holds CAP_IPC_LOCK (root does, and the capability bypasses the limit), with the
 * capability dropped from its bounding set by `setpriv` (or `capsh`).
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MemlockLimitError, NumaErrorCode } from './errors';
import { hasIpcLock } from './process-status';

const LIMIT = 64 * 1024;
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

function available(tool: string): boolean {
  return spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** The command that runs `argv` without CAP_IPC_LOCK, or a reason it cannot. */
function withoutIpcLock(argv: string[]): string[] | string {
  if (!hasIpcLock()) return argv;
  if (available('setpriv')) {
    return ['setpriv', '--inh-caps=-ipc_lock', '--bounding-set=-ipc_lock', '--', ...argv];
  }
  if (available('capsh')) {
    const quoted = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    return ['capsh', '--drop=cap_ipc_lock', '--', '-c', `exec ${quoted}`];
  }
  return 'this process holds CAP_IPC_LOCK and neither setpriv nor capsh is installed to drop it';
}

describe('mlock beyond RLIMIT_MEMLOCK', () => {
  it('states the limit and how to raise it (unit)', () => {
    const error = new MemlockLimitError({
      requested: 2 * 1024 * 1024,
      limit: LIMIT,
      hardLimit: LIMIT,
      lockedBytes: 8192,
      lockedBySource: 0,
    });
    expect(error.code).toBe(NumaErrorCode.MemlockLimit);
    expect(MemlockLimitError.isInstance(error)).toBe(true);
    expect(error.message).toContain('RLIMIT_MEMLOCK is 64.00 KiB (hard limit 64.00 KiB)');
    expect(error.message).toContain('`ulimit -l 2056`');
  });

  it('fails clearly in a child process under a lowered limit', async () => {
    if (!available('prlimit')) {
      console.warn('skipped: prlimit (util-linux) is not installed');
      return;
    }
    const vitest = join(
      dirname(createRequire(import.meta.url).resolve('vitest/package.json')),
      'vitest.mjs',
    );
    const command = withoutIpcLock([
      'prlimit',
      `--memlock=${LIMIT}:${LIMIT}`,
      process.execPath,
      vitest,
      'run',
      '--config',
      'src/test-support/child.vitest.config.ts',
    ]);
    if (typeof command === 'string') {
      console.warn(`skipped: ${command}`);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'allot-numa-memlock-'));
    const resultFile = join(dir, 'result.json');
    try {
      try {
        // Waited for without holding this worker's event loop: the child is a whole vitest run.
        await promisify(execFile)(command[0]!, command.slice(1), {
          cwd: packageRoot,
          env: { ...process.env, ALLOT_NUMA_MEMLOCK_RESULT: resultFile, NO_COLOR: '1' },
          timeout: 90_000,
        });
      } catch (error) {
        const e = error as { stdout?: string; stderr?: string };
        throw new Error(`child failed:\n${e.stdout}\n${e.stderr}`);
      }
      const result = JSON.parse(readFileSync(resultFile, 'utf8'));
      for (const outcome of [result.direct, result.pooled]) {
        expect(outcome.thrown).toBe(true);
        expect(outcome.code).toBe(NumaErrorCode.MemlockLimit);
        expect(outcome.name).toBe('MemlockLimitError');
        expect(outcome.limit).toBe(LIMIT);
        expect(outcome.message).toContain('RLIMIT_MEMLOCK is 64.00 KiB');
        expect(outcome.message).toContain('ulimit -l');
        expect(outcome.message).toContain('CAP_IPC_LOCK');
        expect(outcome.message).toContain('memlock');
      }
      expect(result.direct.requested).toBe(1024 * 1024);
      expect(result.pooled.requested).toBe(2 * 1024 * 1024); // the pool's small segment
      expect(result.reservedAfter).toBe(0); // the mapping went back
      expect(result.small).toEqual({ thrown: false }); // within the limit, locking works
      console.log(`child's error: ${result.direct.message}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
