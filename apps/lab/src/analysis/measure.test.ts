import { defaultSizeClasses } from '@allot/slab';
import { EventKind, inferenceServing, larson, TraceBuilder } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { LAYOUT_BLOCK_BUDGET, layoutView, measureRow, peakEventIndex } from './measure';
import { ALL_ROWS, findRow, profileOf, ROWS } from './registry';

describe('measureRow', () => {
  const trace = inferenceServing({ requests: 20, seed: 3 });
  const profile = profileOf(trace);

  /**
   * The warm-up before timed replays, cut to the two replays in a row it always needs: these tests
   * check the figures, replay-timing.test.ts the warm-up, whose 500 ms budget is kept by the wall
   * clock, so that on a busy machine a warm-up of 100,000 events may leave a row no ns/event.
   */
  const warmupEvents = 0;

  it.each(ROWS.map((row) => row.name))('%s replays without failures, reserved ≥ live', (name) => {
    // Each row is timed by its sampled pass (the next test checks that separate runs agree), which
    // a busy machine cannot leave without a figure.
    const result = measureRow(trace, findRow(name)!, profile, null, {
      seriesPoints: 50,
      longPassMs: 0,
      warmupEvents,
    });
    expect(result.failures).toBe(0);
    expect(result.peakLiveBytes).toBe(profile.peakLiveBytes);
    expect(result.peakReservedBytes).toBeGreaterThanOrEqual(result.peakLiveBytes);
    expect(result.ratio).toBeGreaterThanOrEqual(1);
    expect(result.externalFragmentationAtPeak).toBeGreaterThanOrEqual(0);
    expect(result.externalFragmentationAtPeak).toBeLessThan(1);
    expect(result.nsPerEvent).toBeGreaterThan(0);
    expect(result.series.event.length).toBeLessThanOrEqual(52);
    expect(result.series.event.at(-1)).toBe(trace.length);
    // The sampled live bytes never miss the peak: each point is the largest since the previous one.
    expect(Math.max(...result.series.liveBytes)).toBe(profile.peakLiveBytes);
    expect(Math.max(...result.series.reservedBytes)).toBeLessThanOrEqual(result.peakReservedBytes);
    expect(result.layoutAtPeak.liveBytes).toBeGreaterThanOrEqual(profile.peakLiveBytes);
    if (result.kind === 'pool') expect(result.segments!.acquired).toBeGreaterThan(0);
  });

  it('times a long sampled pass by its replay alone, a short one by separate runs', () => {
    const row = findRow('caching')!;
    const long = measureRow(trace, row, profile, null, {
      seriesPoints: 50,
      longPassMs: 0,
      warmupEvents: 0,
    });
    expect(long.timedRuns).toBe(1);
    expect(long.nsPerEvent).toBeGreaterThan(0);
    expect(Number.isFinite(long.nsPerEvent)).toBe(true);
    const short = measureRow(trace, row, profile, null, {
      seriesPoints: 50,
      longPassMs: Number.POSITIVE_INFINITY,
      warmupEvents,
    });
    expect(short.timedRuns).toBeGreaterThanOrEqual(3);
    // The figures do not depend on how the row was timed.
    expect({ ...long, nsPerEvent: 0, eventsPerSecond: 0, timedRuns: 0 }).toEqual({
      ...short,
      nsPerEvent: 0,
      eventsPerSecond: 0,
      timedRuns: 0,
    });
  });

  it.each(ALL_ROWS.filter((row) => !ROWS.includes(row)).map((row) => row.name))(
    '%s (on request) replays small requests, reserved ≥ live, and its tables match a repeat',
    (name) => {
      // Requests of at most 64 KiB, which every strategy serves (slab's largest class).
      const small = larson({ operations: 3000, seed: 5 });
      const smallProfile = profileOf(small);
      expect(smallProfile.maxSize).toBeLessThanOrEqual(64 * 1024);
      const options = { seriesPoints: 20, skipTiming: true };
      const result = measureRow(small, findRow(name)!, smallProfile, null, options);
      expect(result.failures).toBe(0);
      expect(result.peakLiveBytes).toBe(smallProfile.peakLiveBytes);
      expect(result.peakReservedBytes).toBeGreaterThanOrEqual(result.peakLiveBytes);
      expect(result.layoutAtPeak.liveBytes).toBeGreaterThanOrEqual(smallProfile.peakLiveBytes);
      const again = measureRow(small, findRow(name)!, smallProfile, null, options);
      expect(again.peakReservedBytes).toBe(result.peakReservedBytes);
    },
  );

  it('gives the slab row room for a slab of every class without --capacity', () => {
    // One small block of each default class: little live, but a slab (64 KiB or more) per class.
    const builder = new TraceBuilder();
    for (const size of defaultSizeClasses) builder.alloc(Math.max(1, size - 3));
    const many = builder.build('one of each class');
    const result = measureRow(many, findRow('slab')!, profileOf(many), null, { skipTiming: true });
    expect(result.failures).toBe(0);
    expect(result.peakReservedBytes).toBeGreaterThan(defaultSizeClasses.length * 64 * 1024);
  });

  it('counts failures under a capacity too small and reports the first', () => {
    const small = larson({ operations: 2000, seed: 2 });
    const result = measureRow(small, findRow('best-fit')!, profileOf(small), 64 * 1024, {
      skipTiming: true,
    });
    expect(result.failures).toBeGreaterThan(0);
    expect(result.firstFailure).toBeGreaterThan(0);
    expect(Number.isNaN(result.nsPerEvent)).toBe(true);
  });
});

describe('the sampled live bytes', () => {
  it('hold at each sample the peak of the interval that begins there, where the chart draws it', () => {
    // Every 50 events a burst of 1–5 MiB for one event, a small block in between.
    const builder = new TraceBuilder('bursts');
    builder.alloc(1024);
    for (let n = 0; n < 3000; n++)
      builder.free(builder.alloc(n % 25 === 3 ? 2 ** 20 * (1 + (n % 5)) : 512));
    const trace = builder.build('bursts');
    const live: number[] = [0];
    for (let i = 0; i < trace.length; i++)
      live.push(live[i]! + (trace.kind[i] === EventKind.Alloc ? trace.size[i]! : -trace.size[i]!));
    for (const name of ['best-fit', 'caching']) {
      const result = measureRow(trace, findRow(name)!, profileOf(trace), null, {
        skipTiming: true,
        seriesPoints: 100,
      });
      const { event, liveBytes } = result.series;
      expect(event.length).toBeGreaterThan(50);
      // Sample k is the state after event[k] events; it holds until sample k + 1.
      for (let k = 0; k < event.length; k++) {
        const end = k + 1 < event.length ? event[k + 1]! : event[k]! + 1;
        expect(liveBytes[k], `${name}, sample ${k}`).toBe(Math.max(...live.slice(event[k]!, end)));
      }
    }
  });
});

describe('measureRow with many live blocks', () => {
  it('takes layouts at fewer samples, within the block budget, and keeps every series point', () => {
    const builder = new TraceBuilder('many');
    const blocks = 200_000;
    const ids: number[] = [];
    for (let i = 0; i < blocks; i++) ids.push(builder.alloc(64));
    for (const id of ids) builder.free(id);
    const trace = builder.build('many');
    const bestFit = findRow('best-fit')!;
    let layouts = 0;
    let visited = 0;
    const counting = {
      ...bestFit,
      create: (...args: Parameters<typeof bestFit.create>) => {
        const inner = bestFit.create(...args);
        return {
          ...inner,
          layout: (state: Parameters<typeof inner.layout>[0]) => {
            const layout = inner.layout(state);
            layouts++;
            for (const segment of layout.segments) visited += segment.blocks.length;
            return layout;
          },
        };
      },
    };
    const result = measureRow(trace, counting, profileOf(trace), null, { skipTiming: true });
    expect(result.series.event.length).toBeGreaterThan(300);
    expect(visited).toBeLessThanOrEqual(LAYOUT_BLOCK_BUDGET + 3 * blocks);
    expect(layouts).toBeLessThan(40);
    expect(result.layoutAtPeak.blocks).toBe(blocks);
  });
});

describe('peakEventIndex', () => {
  it('is the first event at which live bytes reach their peak', () => {
    const builder = new TraceBuilder();
    const a = builder.alloc(10);
    builder.alloc(20); // event 1: 30 live
    builder.free(a);
    builder.alloc(10); // event 3: 30 again, not the first
    expect(peakEventIndex(builder.build('t'))).toBe(1);
  });
});

describe('layoutView', () => {
  it('merges same-state neighbours and tiny mixed blocks, never a large block', () => {
    const blocks = [
      { address: 0, size: 1000, free: false },
      { address: 1000, size: 1000, free: false },
      { address: 2000, size: 1, free: true },
      { address: 2001, size: 1, free: false },
      { address: 2002, size: 7998, free: true },
    ];
    const view = layoutView({ segments: [{ address: 0, size: 10_000, blocks }] }, 100);
    // grain = 100 bytes: the two live blocks are one run, the two 1-byte blocks a mixed run.
    expect(view.segments[0]!.runs).toEqual([0, 2000, 1, 2000, 2, 2, 2002, 7998, 0]);
    expect([view.totalBytes, view.liveBytes, view.freeBytes, view.blocks]).toEqual([
      10_000, 2001, 7999, 5,
    ]);
  });
});
