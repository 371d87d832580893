/**
 * Run by memlock.test.ts in a child process under a lowered RLIMIT_MEMLOCK and without
 * CAP_IPC_LOCK: tries to lock more than the limit and writes what happened to the file named by
 * ALLOT_NUMA_MEMLOCK_RESULT.
 */
import { writeFileSync } from 'node:fs';
import { it } from 'vitest';
import { cachingHostAllocator } from '../caching-host-allocator';
import { numaSource } from '../numa-source';

function outcome(attempt: () => unknown): Record<string, unknown> {
  try {
    attempt();
    return { thrown: false };
  } catch (error) {
    const e = error as Error & Record<string, unknown>;
    return {
      thrown: true,
      name: e.name,
      code: e.code,
      message: e.message,
      limit: e.limit,
      requested: e.requested,
    };
  }
}

it('locks past RLIMIT_MEMLOCK', () => {
  const MiB = 1024 * 1024;
  const source = numaSource({ node: 0, pin: 'mlock' });
  const direct = outcome(() => source.acquire(1 * MiB));
  const reservedAfter = source.reservedBytes();
  const pool = cachingHostAllocator({ node: 0, config: '' });
  const pooled = outcome(() => pool.allocate(4096));
  const small = outcome(() => numaSource({ node: 0, pin: 'mlock' }).acquire(4096));
  writeFileSync(
    process.env.ALLOT_NUMA_MEMLOCK_RESULT!,
    JSON.stringify({ direct, pooled, small, reservedAfter }),
  );
});
