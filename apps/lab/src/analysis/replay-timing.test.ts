import { describe, expect, it } from 'vitest';
import { MAX_TIMED_MS, MAX_WARMUP_MS, timeReplays } from './replay-timing';

/** A replay whose times (ms) are `times`, then the last one again and again; counts its calls. */
function replay(times: readonly number[]) {
  let calls = 0;
  let spent = 0;
  const runOnce = () => {
    const ms = times[Math.min(calls, times.length - 1)]!;
    calls++;
    spent += ms;
    return ms;
  };
  return {
    runOnce,
    get calls() {
      return calls;
    },
    get spent() {
      return spent;
    },
  };
}

describe('timing a row’s replays', () => {
  it('times the replay warm, not the first, cold replays of the process', () => {
    // A small recording's first replays in a process run interpreted, 70 times slower (first-fit
    // on 4,352 events: 18 ms, then 0.25 ms once compiled), and each is longer than a steady run.
    const cold = replay([18, 16, 12, 0.5, 0.25]);
    const timing = timeReplays(cold.runOnce, { events: 4352, warmEvents: 4352 });
    expect(timing.median).toBe(0.25);
    expect(timing.runs).toBeGreaterThanOrEqual(3);
  });

  it('times replays too short for the clock in batches', () => {
    const tiny = replay([0.002]);
    const timing = timeReplays(tiny.runOnce, { events: 10, warmEvents: 10 });
    expect(timing.median).toBeCloseTo(0.002, 10);
    // Enough replays for each timed batch to last a millisecond.
    expect(timing.runs).toBeGreaterThanOrEqual(3 * 500);
  });

  it('keeps a steady replay’s time, and stops when one never settles', () => {
    const steady = replay([30]);
    expect(timeReplays(steady.runOnce, { events: 1e6, warmEvents: 1e6 }).median).toBe(30);
    expect(steady.calls).toBeLessThanOrEqual(6);
    // Each replay 10 % faster than the one before, forever: the warm-up and the timing stop.
    const times = Array.from({ length: 200 }, (_, i) => 50 * 0.9 ** i);
    const settling = replay(times);
    timeReplays(settling.runOnce, { events: 1e5 });
    expect(settling.spent).toBeLessThan(MAX_WARMUP_MS + MAX_TIMED_MS + 100);
  });
});
