import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { checkConformance, checkConformanceAsync } from '../src/check-conformance';
import { assertYielding, letGo, YIELD_AFTER_MS, yielding } from '../src/yielding';
import { brokenCases } from './broken-allocators';

/** The message of what `run` throws, or '' when it returns. */
function failureOf(run: () => void): string {
  try {
    run();
  } catch (error) {
    return String(error);
  }
  return '';
}

async function asyncFailureOf(run: () => Promise<void>): Promise<string> {
  try {
    await run();
  } catch (error) {
    return String(error);
  }
  return '';
}

const realNow = performance.now.bind(performance); // before any test fakes it

/** Runs for `ms` of the real wall clock without letting go. */
function spinWall(ms: number): void {
  const until = realNow() + ms;
  while (realNow() < until) {
    // holding the loop
  }
}

/** A property that fails on some arrays, so fast-check reports a shrunk counterexample. */
const failing = () =>
  fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 50 }), (values) => {
    const sum = values.reduce((a, b) => a + b, 0);
    if (values.length > 3 && sum % 7 === 3) throw new Error(`sum ${sum}`);
  });

describe('yielding', () => {
  it('runs what the synchronous property runs: the same runs, counterexample and shrinking', async () => {
    const params = { seed: 42, numRuns: 300 };
    const sync = failureOf(() => fc.assert(failing(), params));
    const yielded = await asyncFailureOf(() => assertYielding(failing(), params));
    expect(sync).toMatch(/Counterexample/);
    expect(yielded).toBe(sync);
    // The reported path replays the counterexample alone.
    const path = /path: "([^"]*)"/.exec(sync)![1]!;
    const replayed = await asyncFailureOf(() =>
      assertYielding(failing(), { ...params, path, numRuns: 1 }),
    );
    expect(replayed).toMatch(/Counterexample/);
  });

  it('sees every generated value, in order, and keeps the hooks', async () => {
    const seen = { sync: [] as number[], yielded: [] as number[] };
    let hooks = 0;
    const property = (into: number[]) =>
      fc
        .property(fc.integer(), (v) => {
          into.push(v);
        })
        .beforeEach(() => {
          hooks++;
        });
    fc.assert(property(seen.sync), { seed: 7, numRuns: 200 });
    await assertYielding(property(seen.yielded), { seed: 7, numRuns: 200 });
    expect(seen.yielded).toEqual(seen.sync);
    expect(hooks).toBe(400);
  });

  it('lets the event loop turn while a long run goes on', async () => {
    let turns = 0;
    const timer = setInterval(() => turns++, 1);
    await fc.assert(yielding(fc.property(fc.integer(), () => spinWall(1))), {
      seed: 1,
      numRuns: 4 * YIELD_AFTER_MS,
    });
    clearInterval(timer);
    // At least 200 ms of runs let go every YIELD_AFTER_MS; a synchronous run would allow no turn.
    expect(turns).toBeGreaterThanOrEqual(2);
  });

  it('lets go with the real timers while a test runs on fake ones', async () => {
    vi.useFakeTimers({ toFake: ['setImmediate', 'setTimeout', 'performance', 'Date'] });
    try {
      let runs = 0;
      const slow = fc.property(fc.integer(), () => {
        runs++;
        spinWall(2);
      });
      await assertYielding(slow, { seed: 3, numRuns: 100 }); // would wait forever on a fake turn
      expect(runs).toBe(100);
    } finally {
      vi.useRealTimers();
    }
  });

  it('letGo resolves at once when the loop was let go just now', async () => {
    await new Promise((resolve) => setImmediate(resolve));
    await letGo();
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    await letGo(); // within YIELD_AFTER_MS of the last time: no turn of the loop
    expect(turned).toBe(false);
  });
});

describe('checkConformanceAsync', () => {
  it('reports what checkConformance reports, replay line included', async () => {
    const { options } = brokenCases.find((c) => c.bug === 'overlapping blocks')!;
    const sync = failureOf(() => checkConformance({ ...options, numRuns: 300 }));
    const yielded = await asyncFailureOf(() => checkConformanceAsync({ ...options, numRuns: 300 }));
    expect(sync).toMatch(/\[no-overlap\][\s\S]*Replay: FC_SEED=/);
    expect(yielded).toBe(sync);
  });
});
