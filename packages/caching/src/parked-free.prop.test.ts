/**
 * The parked free changes no observable figure: a pool that parks and one that cannot (a stats sink
 * attached turns parking off) make the same decisions on the same calls, and their
 * `memory_stats()`, layouts and usage agree whenever they are read.
 */
import { InvalidArgumentError, InvalidFreeError } from '@allot/core';
import { assertYielding, propertyParameters } from '@allot/testkit';
import { addressSource } from '@allot/workloads';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CachingPool, cachingPool } from './caching-pool';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Sizes that repeat (cache hits on split blocks) and some that do not; small and large pools. */
const size = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(64, 512, 4 * KiB, 100 * KiB, MiB, 3 * MiB, 24 * MiB) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 12 * MiB }) },
);

const op = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('alloc' as const), size }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
  // The most recent allocation: the block at the front of its segment's remainder, which parks.
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.constant(-1) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('pair' as const), size }),
  },
  // Same-size pairs in a row: the hot cycle, with something else done mid-pair or after a free.
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('cycle' as const),
      size,
      times: fc.integer({ min: 2, max: 8 }),
      at: fc.nat({ max: 8 }),
      allocated: fc.boolean(),
      interlude: fc.constantFrom('read', 'resetPeak', 'resetAccumulated', 'probe', 'alloc'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      { kind: 'read' as const },
      { kind: 'emptyCache' as const },
      { kind: 'release' as const },
      { kind: 'resetPeak' as const },
      { kind: 'resetAccumulated' as const },
    ),
  },
);

type Interlude = 'read' | 'resetPeak' | 'resetAccumulated' | 'probe' | 'alloc';

/** Does `what` on both pools; `address` is the block of the cycle (live or just freed). */
function interlude(
  what: Interlude,
  a: CachingPool,
  b: CachingPool,
  address: number,
  live: number[],
): void {
  if (what === 'read') {
    same(a, b);
  } else if (what === 'resetPeak') {
    a.resetPeakMemoryStats();
    b.resetPeakMemoryStats();
  } else if (what === 'resetAccumulated') {
    a.resetAccumulatedMemoryStats();
    b.resetAccumulatedMemoryStats();
  } else if (what === 'probe') {
    // A parked block keeps its address-table entry in the hot cycle; it must not read as live.
    expect(a.owns(address)).toBe(b.owns(address));
    const usable = (pool: CachingPool) => (pool.owns(address) ? pool.usableSize(address) : -1);
    expect(usable(a)).toBe(usable(b));
  } else {
    const x = a.allocate(512);
    expect(b.allocate(512)).toBe(x);
    if (x !== null) live.push(x);
  }
}

const config = fc.constantFrom(
  '',
  'max_split_size_mb:20',
  'roundup_power2_divisions:4',
  'garbage_collection_threshold:0.6',
);

function pools(conf: string): [CachingPool, CachingPool] {
  const make = () =>
    cachingPool({
      source: addressSource({ limit: 256 * MiB }),
      config: conf,
      totalMemory: 256 * MiB,
    });
  const parking = make();
  const plain = make();
  // A sink attached: this pool always merges at once.
  plain.attachStatsSink({ segmentAlloc() {}, segmentFree() {}, freeCompleted() {} });
  if (conf.includes('garbage_collection')) {
    parking.setMemoryFraction(0.9);
    plain.setMemoryFraction(0.9);
  }
  return [parking, plain];
}

function same(a: CachingPool, b: CachingPool): void {
  expect(a.memoryStats()).toEqual(b.memoryStats());
  expect(a.layout()).toEqual(b.layout());
  expect(a.usage()).toEqual(b.usage());
}

describe('parked free', () => {
  it('is not taken back when a cached block smaller than the merged one fits', () => {
    for (const parking of pools('')) {
      parking.allocate(512);
      const hole = parking.allocate(4 * KiB)!;
      parking.allocate(512);
      const last = parking.allocate(512)!;
      parking.free(hole);
      parking.free(last);
      // Best fit over the merged state: the 4 KiB hole, not the block freed last.
      expect(parking.allocate(512)).toBe(hole);
    }
  });

  it('is not taken back when a cached block as large as the merged one sits lower', () => {
    for (const parking of pools('')) {
      const a = parking.allocate(MiB)!;
      const b = parking.allocate(MiB)!;
      // The first segment is full: this one opens a second.
      const x = parking.allocate(512)!;
      parking.free(a);
      parking.free(b);
      parking.free(x);
      // Two cached 2 MiB blocks once merged: the lower address wins, the first segment.
      expect(parking.allocate(512)).toBe(a);
    }
  });

  it('serves sizes that take turns from the merged block, as a pool that merges at once', () => {
    const [a, b] = pools('');
    const held = [a.allocate(100 * KiB)!, b.allocate(100 * KiB)!];
    expect(held[0]).toBe(held[1]);
    // Small-pool sizes, then one (3 MiB) from the large pool that settles the parked block.
    const sizes = [512, 3000, 4 * KiB, 64 * KiB, 3000, 200 * KiB, 3 * MiB, 512];
    for (let round = 0; round < 3; round++) {
      for (const s of sizes) {
        const x = a.allocate(s);
        expect(b.allocate(s)).toBe(x);
        same(a, b);
        a.free(x!);
        b.free(x!);
        same(a, b);
      }
    }
  });

  it("refuses a second free of the hot cycle's block, its figures unchanged", () => {
    const [pool] = pools('');
    pool.allocate(4 * KiB);
    let x = -1;
    // Enough same-size pairs for the cycle's figures to be counted rather than stored.
    for (let i = 0; i < 5; i++) {
      x = pool.allocate(64)!;
      pool.free(x);
    }
    const before = pool.memoryStats();
    expect(() => pool.free(x)).toThrow(InvalidFreeError);
    expect(() => pool.usableSize(x)).toThrow(InvalidArgumentError);
    expect(() => pool.recordStream(x, 1)).toThrow(InvalidArgumentError);
    expect(pool.owns(x)).toBe(false);
    expect(pool.memoryStats()).toEqual(before);
    expect(pool.memoryStats()['allocation.all.allocated']).toBe(6);
    expect(pool.memoryStats()['allocation.all.current']).toBe(1);
  });

  it('makes the decisions and keeps the figures of a pool that merges at once', async () => {
    await assertYielding(
      fc.property(config, fc.array(op, { maxLength: 150, size: 'max' }), (conf, ops) => {
        const [a, b] = pools(conf);
        const live: number[] = [];
        for (const o of ops) {
          if (o.kind === 'alloc' || o.kind === 'pair') {
            const x = a.allocate(o.size);
            expect(b.allocate(o.size)).toBe(x);
            if (x === null) continue;
            if (o.kind === 'pair') {
              a.free(x);
              b.free(x);
            } else {
              live.push(x);
            }
          } else if (o.kind === 'free') {
            if (live.length === 0) continue;
            const [x] = live.splice(o.pick < 0 ? live.length - 1 : o.pick % live.length, 1);
            a.free(x!);
            b.free(x!);
          } else if (o.kind === 'cycle') {
            for (let t = 0; t < o.times; t++) {
              const x = a.allocate(o.size);
              expect(b.allocate(o.size)).toBe(x);
              if (x === null) break;
              if (t === o.at && o.allocated) interlude(o.interlude, a, b, x, live);
              a.free(x);
              b.free(x);
              if (t === o.at && !o.allocated) interlude(o.interlude, a, b, x, live);
            }
          } else if (o.kind === 'resetPeak' || o.kind === 'resetAccumulated') {
            interlude(o.kind, a, b, -1, live);
          } else if (o.kind === 'read') {
            same(a, b);
          } else if (o.kind === 'emptyCache') {
            a.emptyCache();
            b.emptyCache();
          } else {
            expect(a.release(2 * MiB)).toBe(b.release(2 * MiB));
          }
        }
        same(a, b);
      }),
      propertyParameters({}),
    );
  });
});
