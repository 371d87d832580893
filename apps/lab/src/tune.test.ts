import { inferenceServing } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { allocConfOf, DEFAULT_POOL_SETTINGS, runPool, tune, tunedMaxSplit } from './tune';

describe('tune', () => {
  const trace = inferenceServing({
    requests: 40,
    layers: 8,
    hidden: 1024,
    maxPromptTokens: 1024,
    seed: 5,
  });

  it('writes settings in PYTORCH_CUDA_ALLOC_CONF syntax', () => {
    expect(allocConfOf(DEFAULT_POOL_SETTINGS)).toBe('');
    expect(
      allocConfOf({
        maxSplitSizeMb: 128,
        roundupPower2Divisions: 4,
        expandableSegments: true,
        garbageCollectionThreshold: 0.7,
      }),
    ).toBe(
      'max_split_size_mb:128,roundup_power2_divisions:4,expandable_segments:True,garbage_collection_threshold:0.7',
    );
  });

  it('finds a setting no worse than the defaults, without failures, under the defaults’ memory', () => {
    const result = tune(trace);
    const defaults = runPool(trace, '', null);
    expect(result.memory).toBe(defaults.peakReservedBytes);
    expect(result.defaults.peakReservedBytes).toBe(defaults.peakReservedBytes);
    expect(result.best.failures).toBe(0);
    expect(result.best.peakReservedBytes).toBeLessThanOrEqual(defaults.peakReservedBytes);
    expect(result.savingBytes).toBe(defaults.peakReservedBytes - result.best.peakReservedBytes);
    expect(result.best.config).toBe(allocConfOf(result.settings));
    expect(new Set(result.tried.map((run) => run.config)).size).toBe(result.tried.length);
    // Better than each knob changed alone (the descent does not stop at the first improvement).
    for (const config of ['expandable_segments:True', 'garbage_collection_threshold:0.5']) {
      expect(result.best.peakReservedBytes).toBeLessThanOrEqual(
        runPool(trace, config, result.memory).peakReservedBytes,
      );
    }
    expect(result.savingFraction).toBeGreaterThan(0.1);
  });

  it('counts failures when the memory stated is too small', () => {
    const result = tune(trace, { memory: 2 ** 24 });
    expect(result.best.failures).toBeGreaterThan(0);
  });

  it('caches the max_split_size_mb search per trace', () => {
    const first = tunedMaxSplit(trace, null);
    expect(tunedMaxSplit(trace, null)).toBe(first);
  });
});
