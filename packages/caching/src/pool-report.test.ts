import { OutOfMemoryError } from '@allot/core';
import { diagnose, flattenPoolStats, fragmentation } from '@allot/stats';
import { describe, expect, it } from 'vitest';
import { type CachingPool, cachingPool } from './caching-pool';
import { KiB, MiB, recordingSource } from './test-support/recording-source';

/** A deterministic mix of sizes, frees and private pools (a linear congruential sequence). */
function churn(pool: CachingPool, steps: number, seed: number): number[] {
  let x = seed;
  const next = () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
  const live: number[] = [];
  for (let i = 0; i < steps; i++) {
    if (live.length > 0 && next() < 0.45) {
      pool.free(live.splice(Math.floor(next() * live.length), 1)[0]!);
      continue;
    }
    const size = Math.ceil(2 ** (9 + next() * 16));
    const address = pool.allocate(size);
    if (address !== null) live.push(address);
  }
  return live;
}

describe('reporting: the pool computes its own figures, as @allot/stats would', () => {
  for (const config of ['', 'max_split_size_mb:20', 'expandable_segments:True']) {
    it(`freeSpace() is fragmentation(layout())'s free bytes and largest block (${config || 'default'})`, () => {
      const pool = cachingPool({ source: recordingSource({ growable: true }), config });
      for (let round = 0; round < 6; round++) {
        const live = churn(pool, 150, 20 + round);
        for (const address of live.slice(0, live.length / 3)) pool.free(address);
        const figures = fragmentation(pool.layout());
        expect(figures.freeBytes).toBeGreaterThan(0);
        expect(pool.freeSpace()).toEqual({
          freeBytes: figures.freeBytes,
          largestFreeBlock: figures.largestFreeBlock,
        });
      }
    });
  }

  for (const config of ['', 'max_split_size_mb:20', 'expandable_segments:True']) {
    it(`memoryStats() equals flattenPoolStats(poolStats()) (${config || 'default'})`, () => {
      const pool = cachingPool({ source: recordingSource({ growable: true }), config });
      const live = churn(pool, 400, 7);
      const privatePool = pool.withPrivatePool((p) => {
        churn(pool, 100, 11);
        return p;
      });
      for (const address of live.slice(0, live.length / 2)) pool.free(address);
      pool.resetPeakMemoryStats();
      churn(pool, 100, 13);
      expect(pool.memoryStats()).toEqual(flattenPoolStats(pool.poolStats()));
      expect(Object.keys(pool.memoryStats())).toEqual(
        Object.keys(flattenPoolStats(pool.poolStats())),
      );
      expect(privatePool.memoryStats()).toEqual(flattenPoolStats(privatePool.poolStats()));
    });
  }

  it('the out-of-memory diagnosis has the figures of stats’ diagnose(pool), for every cause', () => {
    // [cause, limit, set-up returning the failing request: size, alignment, stream]
    const cases: [string, number, (pool: CachingPool) => [number, number?, number?]][] = [
      [
        'exhaustion',
        4 * MiB,
        (pool) => {
          for (let i = 0; i < 4; i++) pool.allocate(MiB);
          return [512 * KiB];
        },
      ],
      [
        'fragmentation',
        4 * MiB,
        (pool) => {
          const small = Array.from({ length: 8 }, () => pool.allocate(256 * KiB)!);
          for (let i = 0; i < 4; i++) pool.allocate(512 * KiB);
          for (let i = 0; i < small.length; i += 2) pool.free(small[i]!);
          return [768 * KiB];
        },
      ],
      [
        'alignment',
        2 * MiB,
        (pool) => {
          const blocks = Array.from({ length: 4 }, () => pool.allocate(512 * KiB)!);
          pool.free(blocks[1]!);
          return [256 * KiB, MiB];
        },
      ],
      [
        'policy',
        2 * MiB,
        (pool) => {
          const a = pool.allocateOn(1, MiB)!;
          pool.allocateOn(1, MiB);
          pool.free(a);
          return [MiB, undefined, 0];
        },
      ],
    ];
    for (const [cause, limit, setUp] of cases) {
      const pool = cachingPool({ source: recordingSource({ limit }), config: '' });
      const [size, alignment, stream = 0] = setUp(pool);
      let error: unknown;
      try {
        pool.allocateOnOrThrow(stream, size, alignment);
      } catch (e) {
        error = e;
      }
      expect(OutOfMemoryError.isInstance(error), cause).toBe(true);
      const mine = (error as OutOfMemoryError).diagnosis as Record<string, unknown>;
      const { summary, fragmentation, ...theirs } = diagnose(pool, size, alignment);
      expect(theirs.cause).toBe(cause);
      expect(fragmentation).toBeDefined();
      expect({ ...mine, summary: undefined }).toEqual({ ...theirs, summary: undefined });
      expect(typeof mine.summary === 'string' && mine.summary.length > 0).toBe(true);
      expect((error as OutOfMemoryError).message).toContain(mine.summary);
    }
  });
});
