import { describe, expect, it } from 'vitest';
import { MAX_TIMED_MS, MAX_WARMUP_MS, NOT_WARM, timeReplays } from './replay-timing';

/**
 * A replay whose times (ms) are `times`, then the last one again and again, each restarted at a
 * cost of `reset` ms; its clock advances by both.
 */
function replay(times: readonly number[], reset = 0) {
  let calls = 0;
  let clock = 0;
  return {
    runOnce: () => {
      const ms = times[Math.min(calls, times.length - 1)]!;
      calls++;
      clock += reset + ms;
      return ms;
    },
    now: () => clock,
    get calls() {
      return calls;
    },
  };
}

describe('timing a row’s replays', () => {
  it('times the replay warm, not the first, cold replays of the process', () => {
    // A small recording's first replays in a process run interpreted, 70 times slower (first-fit
    // on 4,352 events: 18 ms, then 0.25 ms once compiled), and each is longer than a steady run.
    const cold = replay([18, 16, 12, 0.5, 0.25], 0.05);
    const timing = timeReplays(cold.runOnce, { events: 4352, warmEvents: 4352, now: cold.now });
    expect(timing).toEqual({ median: 0.25, runs: 25 });
  });

  it('gives no figure, and says why, where the replays cannot warm up in time', () => {
    // 16 events a replay, 0.2 ms to restart each: 100,000 events would take 1.25 s of restarts.
    const tiny = replay([0.01, 0.004], 0.2);
    expect(timeReplays(tiny.runOnce, { events: 16, now: tiny.now })).toEqual({
      median: null,
      why: NOT_WARM,
    });
    expect(tiny.now()).toBeLessThanOrEqual(MAX_WARMUP_MS + 1);
    // Each replay 10 % faster than the one before, forever: never warm.
    const settling = replay(
      Array.from({ length: 2000 }, (_, i) => 50 * 0.7 ** i),
      1,
    );
    expect(timeReplays(settling.runOnce, { events: 1e5, now: settling.now }).median).toBeNull();
  });

  it('keeps a steady replay’s time, and stops timing within its budget', () => {
    const steady = replay([30]);
    expect(timeReplays(steady.runOnce, { events: 1e6, warmEvents: 1e6, now: steady.now })).toEqual({
      median: 30,
      runs: 3,
    });
    expect(steady.calls).toBe(6);
    // Replays of 1.5 s: three to warm up, whatever the budget; none timed past MAX_TIMED_MS.
    const slow = replay([1500]);
    const timing = timeReplays(slow.runOnce, { events: 1e6, warmEvents: 1e6, now: slow.now });
    expect(timing).toEqual({ median: 1500, runs: Math.ceil(MAX_TIMED_MS / 1500) });
    expect(slow.now()).toBe((3 + Math.ceil(MAX_TIMED_MS / 1500)) * 1500);
  });
});
