import { findStrategy } from '@allot/lab/strategies';
import { describe, expect, it } from 'vitest';
import type { BenchAllocator } from './bench-allocator';
import { measureRaw, PAIRS_ARENA, PAIRS_WARMUP_PASSES, WARMUP_PASSES } from './raw-measure';
import type { RawWorkload } from './raw-plan';

const pairs: RawWorkload = { id: 'pairs-64', title: 'pairs', kind: 'pairs', size: 64, pairs: 2000 };
const random: RawWorkload = {
  id: 'random-test',
  title: 'random',
  kind: 'random',
  liveBlocks: 200,
  operations: 3000,
  arenaBytes: 2 ** 22,
};

/** A bump allocator that counts what the harness asks of it. */
function countingBump(): BenchAllocator & { rewinds: number; frees: number; top: number } {
  const state = {
    rewinds: 0,
    frees: 0,
    top: 0,
    allocate(size: number): number | null {
      const address = state.top;
      state.top += size;
      return address;
    },
    free(): void {
      state.frees++;
    },
    rewind(): void {
      state.rewinds++;
      state.top = 0;
    },
  };
  return state;
}

describe('measureRaw', () => {
  it('times a strategy over the arena: every call counted, nothing failed, all given back', () => {
    const strategy = findStrategy('first-fit')!;
    const built: BenchAllocator[] = [];
    const row = {
      name: 'first-fit',
      factory: (capacity: number) => {
        const allocator = strategy.build(capacity);
        built.push(allocator);
        return allocator;
      },
    };
    const onPairs = measureRaw(row, pairs, 1);
    expect(onPairs).toMatchObject({ calls: 4000, failures: 0, capacity: PAIRS_ARENA });
    expect(onPairs.cpuNs).toBeGreaterThan(0);
    const onRandom = measureRaw(row, random, 1);
    expect(onRandom).toMatchObject({ calls: 3000, failures: 0, capacity: 2 ** 22 });
    // One allocator per measurement, reused between the warm-up and the timed pass, and reset.
    expect(built).toHaveLength(2);
    expect((built[1] as ReturnType<typeof strategy.build>).usage().liveCount).toBe(0);
  });

  it('gives a row its own capacity, and empties one without reset by freeing and rewinding', () => {
    const bump = countingBump();
    const result = measureRaw(
      { name: 'bump', factory: () => bump, capacity: (profile) => profile.totalAllocatedBytes },
      random,
      1,
    );
    expect(result.capacity).toBeGreaterThan(random.liveBlocks * 16);
    // After each warm-up pass and after the timed pass.
    expect(bump.rewinds).toBe(WARMUP_PASSES + 1);
    expect(bump.frees).toBeGreaterThan(2 * random.liveBlocks);
    expect(bump.top).toBe(0);
  });

  it('warms a pairs workload up with its own count of passes, each emptied', () => {
    const bump = countingBump();
    const result = measureRaw({ name: 'bump', factory: () => bump }, pairs, 1);
    expect(result.calls).toBe(2 * pairs.pairs);
    expect(bump.rewinds).toBe(PAIRS_WARMUP_PASSES);
  });
});
