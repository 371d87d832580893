import { DEFAULT_SETTINGS, formatAllocConf } from '@allot/caching';
import { inferenceServing } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { ASSUMED_MEMORY, searchDevice } from './device';
import { EXPANDABLE_SETTINGS } from './pool-instance';
import { recommend, runPool, tune } from './tune';

const GIB = 2 ** 30;

describe('tune', () => {
  const trace = inferenceServing({
    requests: 40,
    layers: 8,
    hidden: 1024,
    maxPromptTokens: 1024,
    seed: 5,
  });

  it('assumes an 80 GiB device without a fraction, and says so', () => {
    expect(searchDevice(trace, {})).toEqual({
      device: { memory: ASSUMED_MEMORY, fraction: null },
      origin: 'assumed',
    });
    expect(searchDevice(trace, { memory: 8 * GIB, fraction: 0.5 })).toEqual({
      device: { memory: 8 * GIB, fraction: 0.5 },
      origin: 'stated',
    });
  });

  it('recommends nothing predicted worse than the defaults, without failures', () => {
    const result = tune(trace);
    const defaults = runPool(trace, DEFAULT_SETTINGS, result.device);
    expect(result.defaults.peakReservedBytes).toBe(defaults.peakReservedBytes);
    expect(result.best.failures).toBe(0);
    expect(result.best.peakReservedBytes).toBeLessThanOrEqual(defaults.peakReservedBytes);
    expect(result.savingBytes).toBe(defaults.peakReservedBytes - result.best.peakReservedBytes);
    expect(result.best.config).toBe(formatAllocConf(result.best.settings));
    expect(new Set(result.tried.map((run) => run.config)).size).toBe(result.tried.length);
    // Better than each knob changed alone (the descent does not stop at the first improvement).
    expect(result.best.peakReservedBytes).toBeLessThanOrEqual(
      runPool(trace, EXPANDABLE_SETTINGS, result.device).peakReservedBytes * 1.01,
    );
    expect(result.savingFraction).toBeGreaterThan(0.1);
  });

  it('searches garbage collection only under a per-process fraction, as PyTorch applies it', () => {
    const without = tune(trace);
    expect(without.tried.some((run) => run.settings.garbageCollectionThreshold > 0)).toBe(false);
    const withFraction = tune(trace, { memory: 80 * GIB, fraction: 0.5 });
    expect(withFraction.tried.some((run) => run.settings.garbageCollectionThreshold > 0)).toBe(
      true,
    );
    // Without a fraction the threshold changes nothing, however low.
    const threshold = { ...DEFAULT_SETTINGS, garbageCollectionThreshold: 0.01 };
    expect(runPool(trace, threshold, without.device).peakReservedBytes).toBe(
      without.defaults.peakReservedBytes,
    );
  });

  it('counts failures when the memory stated is too small, and searches nothing below the peak live bytes', () => {
    const result = tune(trace, { memory: 2 ** 24 });
    expect(result.best.failures).toBeGreaterThan(0);
    expect(result.peakLiveBytes).toBeGreaterThan(2 ** 24);
    expect(result.tried).toEqual([result.defaults]);
  });
});

describe('recommend', () => {
  const run = (config: string, peak: number, failures = 0) => ({
    config,
    settings: DEFAULT_SETTINGS,
    peakReservedBytes: peak,
    peakLiveBytes: 1,
    failures,
    segments: { acquired: 1, released: 0, grown: 0 },
  });

  it('takes the fewest keys among settings within 1 % of the lowest peak', () => {
    const defaults = run('', 1000);
    const tried = [defaults, run('a:1,b:2', 800), run('c:3', 805), run('d:4', 900)];
    expect(recommend(defaults, tried).config).toBe('c:3');
  });

  it('keeps the defaults when nothing is predicted better, or when they are within 1 %', () => {
    const defaults = run('', 1000);
    expect(recommend(defaults, [defaults, run('a:1', 1000)])).toBe(defaults);
    expect(recommend(defaults, [defaults, run('a:1', 995)])).toBe(defaults);
    expect(recommend(defaults, [defaults, run('a:1', 990)]).config).toBe('a:1');
  });

  it('prefers fewer failures over a lower peak', () => {
    const defaults = run('', 1000, 3);
    expect(recommend(defaults, [defaults, run('a:1', 2000, 0), run('b:1', 10, 1)]).config).toBe(
      'a:1',
    );
  });
});
