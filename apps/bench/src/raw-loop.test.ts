import { describe, expect, it } from 'vitest';
import type { BenchAllocator } from './bench-allocator';
import { freeHandles, runPairs, runPlan } from './raw-loop';
import { planRandom } from './raw-plan';

/** A model allocator: hands out increasing addresses, refuses every `failEvery`-th allocation. */
class Model implements BenchAllocator {
  readonly live = new Map<number, number>();
  calls = 0;
  private allocations = 0;
  private top = 0;

  constructor(private readonly failEvery = 0) {}

  allocate(size: number): number | null {
    this.calls++;
    this.allocations++;
    if (this.failEvery > 0 && this.allocations % this.failEvery === 0) return null;
    const address = this.top;
    this.top += size;
    this.live.set(address, size);
    return address;
  }

  free(address: number): void {
    this.calls++;
    if (!this.live.delete(address)) throw new Error(`${address} is not live`);
  }
}

const workload = {
  id: 'random-test',
  title: 'test',
  kind: 'random',
  liveBlocks: 300,
  operations: 5000,
  arenaBytes: 2 ** 24,
} as const;

describe('the raw loops', () => {
  it('free each pair at once and count the failed allocations', () => {
    const model = new Model(4);
    expect(runPairs(model, 64, 100)).toBe(25);
    expect(model.live.size).toBe(0);
    expect(model.calls).toBe(175);
  });

  it('run a plan with only live blocks freed, and leave its live blocks in the handles', () => {
    const plan = planRandom(workload, 2);
    const model = new Model();
    const handles = runPlan(model, plan);
    expect(handles.failures).toBe(0);
    expect(model.live.size).toBe(handles.live);
    expect(new Set(handles.addresses.subarray(0, handles.live))).toEqual(
      new Set(model.live.keys()),
    );
    freeHandles(model, handles);
    expect(model.live.size).toBe(0);
    expect(handles.live).toBe(0);
  });

  it('keep a failed allocation as a handle that is never freed', () => {
    const plan = planRandom(workload, 2);
    const model = new Model(7);
    const handles = runPlan(model, plan);
    expect(handles.failures).toBeGreaterThan(0);
    // The plan's live count is kept whatever fails; the model holds the ones that succeeded.
    expect(handles.live).toBe(runPlan(new Model(), plan).live);
    expect(model.live.size).toBe(
      handles.addresses.subarray(0, handles.live).filter((a) => a >= 0).length,
    );
    freeHandles(model, handles);
    expect(model.live.size).toBe(0);
  });
});
