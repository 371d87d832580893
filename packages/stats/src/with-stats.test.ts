import { InvalidArgumentError, InvalidFreeError, OutOfMemoryError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { tinyFirstFit } from '../test/support/tiny-first-fit';
import type { OutOfMemoryDiagnosis } from './diagnose';
import type { PoolStatsSource, StatsSink } from './pool-stats';
import { withStats } from './with-stats';

const KiB = 1024;

/** Fills 4 KiB with 1 KiB blocks and frees every other one: 2 KiB free, largest 1 KiB. */
function checkerboard() {
  const upstream = tinyFirstFit({ capacity: 4 * KiB, granule: 1 });
  const stats = withStats(upstream);
  const blocks = [0, 1, 2, 3].map(() => stats.allocate(KiB)!);
  stats.free(blocks[0]!);
  stats.free(blocks[2]!);
  return { upstream, stats };
}

describe('withStats', () => {
  it('is an adaptor: exposes upstream and passes the contract through', () => {
    const upstream = tinyFirstFit({ capacity: 4 * KiB });
    const stats = withStats(upstream);
    expect(stats.upstream).toBe(upstream);
    expect(stats.alignment).toBe(upstream.alignment);
    const a = stats.allocate(100)!;
    expect(stats.owns(a)).toBe(true);
    expect(stats.usableSize(a)).toBe(104);
    expect(stats.usage()).toEqual(upstream.usage());
    expect(stats.layout!()).toEqual(upstream.layout());
    stats.reset();
    expect(stats.totals().allocatedBytes.current).toBe(0);
    expect(stats.totals().allocatedBytes.freed).toBe(104);
    expect(stats.usage().liveCount).toBe(0);
  });

  it('leaves layout out when the upstream has none', () => {
    const { layout: _layout, ...plain } = tinyFirstFit({ capacity: 1024 });
    const stats = withStats(plain);
    expect(stats.layout).toBeUndefined();
    expect(stats.fragmentation()).toBeUndefined();
  });

  it('throws the upstream error on misuse and changes no counter', () => {
    const stats = withStats(tinyFirstFit({ capacity: 4 * KiB }));
    const a = stats.allocate(64)!;
    const before = stats.totals();
    expect(() => stats.free(a + 8)).toThrow(InvalidFreeError);
    expect(() => stats.free(999_999)).toThrow(InvalidFreeError);
    expect(() => stats.allocate(0)).toThrow(InvalidArgumentError);
    expect(() => stats.allocate(8, 3)).toThrow(InvalidArgumentError);
    stats.free(a);
    expect(() => stats.free(a)).toThrow(InvalidFreeError);
    expect(stats.totals().allocations.freed).toBe(before.allocations.freed + 1);
    expect(stats.totals().failures.allocated).toBe(0);
  });

  it('measures nested scopes like RMM push/pop', () => {
    const stats = withStats(tinyFirstFit({ capacity: 64 * KiB, granule: 1 }));
    const outer = stats.allocate(1000)!;
    stats.push();
    const a = stats.allocate(300)!;
    stats.push();
    stats.allocate(200);
    const inner = stats.pop();
    expect(inner.requestedBytes).toEqual({ current: 200, peak: 200, allocated: 200, freed: 0 });
    stats.free(a);
    stats.free(outer); // freeing a block from before the scope makes current negative
    const middle = stats.pop();
    expect(middle.requestedBytes).toEqual({
      current: -800,
      peak: 500,
      allocated: 500,
      freed: 1300,
    });
    expect(stats.totals().requestedBytes).toEqual({
      current: 200,
      peak: 1500,
      allocated: 1500,
      freed: 1300,
    });
    const { result, counters } = stats.measure(() => stats.allocate(50));
    expect(result).not.toBeNull();
    expect(counters.allocations).toEqual({ current: 1, peak: 1, allocated: 1, freed: 0 });
    expect(() =>
      stats.measure(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(stats.depth).toBe(0);
  });

  it('resets peaks to the current figure inside an open scope', () => {
    // alloc, push, free the outer block inside the scope, resetPeak: every peak is now current.
    const stats = withStats(tinyFirstFit({ capacity: 64 * KiB, granule: 1 }));
    const a = stats.allocate(1)!;
    stats.push();
    stats.free(a);
    stats.resetPeak();
    expect(stats.totals().requestedBytes).toMatchObject({ current: 0, peak: 0 });
    stats.allocate(5);
    expect(stats.totals().requestedBytes).toMatchObject({ current: 5, peak: 5 });
    expect(stats.pop().requestedBytes).toMatchObject({ current: 4, peak: 4 }); // the scope's own net figures
    expect(stats.totals().requestedBytes).toMatchObject({ current: 5, peak: 5 });
  });

  it('resets peaks and accumulated figures', () => {
    const stats = withStats(tinyFirstFit({ capacity: 64 * KiB, granule: 1 }));
    const a = stats.allocate(1000)!;
    stats.allocate(10);
    stats.free(a);
    expect(stats.totals().requestedBytes.peak).toBe(1010);
    stats.resetPeak();
    expect(stats.totals().requestedBytes.peak).toBe(10);
    stats.resetAccumulated();
    expect(stats.totals().requestedBytes).toEqual({
      current: 10,
      peak: 10,
      allocated: 0,
      freed: 0,
    });
    expect(stats.sizeHistogram().count).toBe(0);
  });

  it('keeps a size histogram of requests', () => {
    const stats = withStats(tinyFirstFit({ capacity: 64 * KiB }));
    for (const size of [1, 8, 9, 16, 1000, 1024]) stats.allocate(size);
    expect(stats.sizeHistogram().buckets.map((b) => [b.upper, b.count])).toEqual([
      [1, 1],
      [8, 1],
      [16, 2],
      [1024, 2],
    ]);
  });

  it('counts failures, tells observers why, and throws with the diagnosis', () => {
    const { stats } = checkerboard();
    const seen: OutOfMemoryDiagnosis[] = [];
    const unsubscribe = stats.onOutOfMemory((d) => seen.push(d));
    expect(stats.allocate(2 * KiB)).toBeNull();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.reason).toBe('fragmentation');
    expect(seen[0]!.cause).toBe('fragmentation');
    expect(seen[0]!.freeBytes).toBe(2 * KiB);
    expect(seen[0]!.largestFreeBlock).toBe(KiB);
    expect(seen[0]!.externalFragmentation).toBeCloseTo(0.5);
    let error: unknown;
    try {
      stats.allocateOrThrow(3 * KiB);
    } catch (e) {
      error = e;
    }
    expect(OutOfMemoryError.isInstance(error)).toBe(true);
    const oom = error as OutOfMemoryError;
    expect(oom.reason).toBe('exhaustion');
    expect((oom.diagnosis as OutOfMemoryDiagnosis).shortfall).toBe(KiB);
    expect(oom.message).toContain('Exhaustion');
    expect(seen).toHaveLength(2);
    unsubscribe();
    expect(stats.allocate(2 * KiB)).toBeNull();
    expect(seen).toHaveLength(2);
    expect(stats.totals().failures).toEqual({ current: 3, peak: 3, allocated: 3, freed: 0 });
  });

  it('diagnoses in allocateOrThrow even without observers', () => {
    const { stats } = checkerboard();
    expect(() => stats.allocateOrThrow(2 * KiB)).toThrow(/Fragmentation/);
  });

  it('runs every observer before rethrowing the first observer error', () => {
    const { stats } = checkerboard();
    let second = 0;
    stats.onOutOfMemory(() => {
      throw new Error('first');
    });
    stats.onOutOfMemory(() => second++);
    expect(() => stats.allocate(2 * KiB)).toThrow('first');
    expect(second).toBe(1);
    expect(stats.totals().failures.allocated).toBe(1);
  });

  it('records a trace when asked, with frees split as PyTorch does', () => {
    let now = 1000;
    const stats = withStats(tinyFirstFit({ capacity: 4 * KiB }), {
      trace: { clock: () => now++ },
    });
    const a = stats.allocate(100)!;
    stats.annotate('step', 'START');
    stats.free(a);
    stats.allocate(8 * KiB);
    expect(stats.trace()).toEqual([
      { action: 'alloc', address: a, size: 104, stream: 0, time: 1000 },
      {
        action: 'annotation',
        address: 0,
        size: 0,
        stream: 0,
        time: 1001,
        name: 'step',
        stage: 'START',
      },
      { action: 'free_requested', address: a, size: 104, stream: 0, time: 1002 },
      { action: 'free_completed', address: a, size: 104, stream: 0, time: 1002 },
      { action: 'oom', address: 0, size: 8 * KiB, stream: 0, time: 1003, freeBytes: 4 * KiB },
    ]);
    stats.recordHistory(false);
    expect(stats.tracing).toBe(false);
    stats.allocate(8);
    expect(stats.trace()).toEqual([]);
  });

  it('keeps the newest events when the ring is full', () => {
    const stats = withStats(tinyFirstFit({ capacity: 64 * KiB }), { trace: { capacity: 4 } });
    for (let i = 1; i <= 10; i++) stats.allocate(i * 8);
    expect(stats.trace().map((e) => e.size)).toEqual([56, 64, 72, 80]);
    expect(stats.droppedEvents).toBe(6);
  });

  it('records stacks only when asked, and gives them to snapshot blocks', () => {
    const stats = withStats(tinyFirstFit({ capacity: 4 * KiB }), { trace: { stacks: true } });
    const a = stats.allocate(64)!;
    const event = stats.trace()[0]!;
    expect(event.stack).toContain('with-stats.test');
    const block = stats.snapshot().segments[0]!.blocks.find((b) => b.address === a)!;
    expect(block.stack).toContain('with-stats.test');
    expect(block.state).toBe('active_allocated');
    expect(block.requestedSize).toBe(64);
  });

  it('takes snapshots from the layout and records a snapshot event', () => {
    const stats = withStats(tinyFirstFit({ capacity: 4 * KiB, pool: 'small' }), { trace: true });
    const a = stats.allocate(100)!;
    const snapshot = stats.snapshot();
    expect(snapshot.segments).toHaveLength(1);
    expect(snapshot.segments[0]).toMatchObject({
      address: 0,
      size: 4 * KiB,
      pool: 'small',
      stream: 0,
    });
    expect(snapshot.segments[0]!.blocks).toEqual([
      { address: a, size: 104, requestedSize: 100, state: 'active_allocated' },
      { address: 104, size: 4 * KiB - 104, requestedSize: 0, state: 'inactive' },
    ]);
    expect(snapshot.trace.at(-1)!.action).toBe('snapshot');
    expect(snapshot.counters.allocations.current).toBe(1);
  });

  it('feeds segment events of a pool source into the trace', () => {
    let sink: StatsSink | undefined;
    let detached = false;
    const inner = tinyFirstFit({ capacity: 4 * KiB });
    const pool = Object.assign(Object.create(null) as object, inner, {
      defersFrees: true,
      poolStats: () => ({ pools: {} }),
      attachStatsSink(s: StatsSink) {
        sink = s;
        return () => {
          detached = true;
        };
      },
    }) as typeof inner & PoolStatsSource;
    const stats = withStats(pool, { trace: { clock: () => 5 } });
    expect(stats.poolSource).toBe(pool);
    sink!.segmentAlloc(0, 4 * KiB);
    const a = stats.allocate(64)!;
    stats.free(a);
    sink!.freeCompleted(a, 64, 7);
    sink!.segmentFree(0, 4 * KiB);
    expect(stats.trace().map((e) => [e.action, e.stream])).toEqual([
      ['segment_alloc', 0],
      ['alloc', 0],
      ['free_requested', 0],
      ['free_completed', 7],
      ['segment_free', 0],
    ]);
    stats.detach();
    expect(detached).toBe(true);
  });

  it('finds a pool source further up the upstream chain', () => {
    const inner = Object.assign(tinyFirstFit({ capacity: KiB }), {
      poolStats: () => ({ pools: {} }),
    });
    const outer = withStats(withStats(inner));
    expect(outer.poolSource).toBe(inner);
  });

  it('does not count blocks allocated before wrapping, but frees them', () => {
    const upstream = tinyFirstFit({ capacity: 4 * KiB });
    const early = upstream.allocate(64)!;
    const stats = withStats(upstream);
    stats.free(early);
    expect(upstream.owns(early)).toBe(false);
    expect(stats.totals().allocations).toEqual({ current: 0, peak: 0, allocated: 0, freed: 0 });
  });
});
