import { describe, expect, it } from 'vitest';
import {
  planRandom,
  RAW_DRIFT,
  RAW_MAX_SIZE,
  RAW_MIN_SIZE,
  type RawWorkload,
  rawWorkloads,
} from './raw-plan';

type RandomWorkload = Extract<RawWorkload, { kind: 'random' }>;

const small: RandomWorkload = {
  id: 'random-test',
  title: 'test',
  kind: 'random',
  liveBlocks: 2000,
  operations: 50_000,
  arenaBytes: 2 ** 25,
};

/** Replays a plan's bookkeeping: the live count after each operation, checking every slot. */
function liveCounts(workload: RandomWorkload, seed: number): { low: number; high: number } {
  const plan = planRandom(workload, seed);
  let live = plan.fill.length;
  let low = live;
  let high = live;
  for (const operation of plan.operations) {
    if (operation > 0) {
      expect(Number.isInteger(operation)).toBe(true);
      live++;
    } else {
      const slot = -operation - 1;
      expect(Number.isInteger(slot) && slot >= 0 && slot < live).toBe(true);
      live--;
    }
    low = Math.min(low, live);
    high = Math.max(high, live);
  }
  expect(high).toBe(plan.maxLive);
  return { low, high };
}

describe('raw workloads', () => {
  it('are pairs-64, random-5k and random-100k, with 10^6 timed calls or operations', () => {
    const [pairs, mix, growth] = rawWorkloads();
    expect(pairs).toMatchObject({ id: 'pairs-64', kind: 'pairs', size: 64, pairs: 1_000_000 });
    expect(mix).toMatchObject({ id: 'random-5k', liveBlocks: 5000, operations: 1_000_000 });
    expect(mix).toMatchObject({ arenaBytes: 64 * 2 ** 20 });
    expect(growth).toMatchObject({ id: 'random-100k', liveBlocks: 100_000 });
    expect(growth).toMatchObject({ arenaBytes: 20 * 64 * 2 ** 20 });
    expect(rawWorkloads(true)[1]).toMatchObject({ operations: 100_000 });
  });

  it('fills random-5k to about 60 % of its arena with sizes from 16 B to 64 KiB', () => {
    const workload = rawWorkloads()[1] as RandomWorkload;
    const plan = planRandom({ ...workload, operations: 0 }, 1);
    expect(plan.fill.length).toBe(5000);
    expect(Math.min(...plan.fill)).toBeGreaterThanOrEqual(RAW_MIN_SIZE);
    expect(Math.max(...plan.fill)).toBeLessThanOrEqual(RAW_MAX_SIZE);
    const share = plan.fillBytes / workload.arenaBytes;
    expect(share).toBeGreaterThan(0.5);
    expect(share).toBeLessThan(0.7);
    // Log-uniform: as many blocks below 1 KiB (6 of 12 doublings) as above.
    const below = plan.fill.filter((size) => size < 1024).length;
    expect(Math.abs(below - 2500)).toBeLessThan(250);
  });

  it('keeps the live count within ±5 % of the target, freeing only live slots', () => {
    const { low, high } = liveCounts(small, 7);
    expect(low).toBeGreaterThanOrEqual(Math.floor(small.liveBlocks * (1 - RAW_DRIFT)));
    expect(high).toBeLessThanOrEqual(Math.ceil(small.liveBlocks * (1 + RAW_DRIFT)));
    // It does wander: not a fixed alternation of one allocation and one free.
    expect(high - low).toBeGreaterThan(small.liveBlocks * 0.01);
  });

  it('is the same plan for the same seed and another for another', () => {
    const a = planRandom(small, 3);
    const b = planRandom(small, 3);
    const c = planRandom(small, 4);
    expect(b.operations).toEqual(a.operations);
    expect(b.fill).toEqual(a.fill);
    expect(c.operations).not.toEqual(a.operations);
    const allocations = a.operations.filter((op) => op > 0).length;
    expect(a.allocations).toBe(small.liveBlocks + allocations);
    expect(Math.abs(allocations - small.operations / 2)).toBeLessThan(
      small.liveBlocks * RAW_DRIFT + 1,
    );
  });
});
