import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from './options';
import { hybridSplit, type WorkloadProfile } from './registry';
import { planWorkloads } from './workload-plan';

describe('parseCli', () => {
  it('reads the options', () => {
    const options = parseCli([
      '--quick',
      '--runs',
      '5',
      '--allocators',
      'best-fit, bump',
      '--no-write',
    ]);
    expect(options.settings.quick).toBe(true);
    expect(options.settings.runs).toBe(5);
    expect(options.allocators).toEqual(['best-fit', 'bump']);
    expect(options.write).toBe(false);
  });

  it('rejects unknown options and bad values', () => {
    expect(() => parseCli(['--fast'])).toThrow(UsageError);
    expect(() => parseCli(['--runs', '0'])).toThrow(/--runs expects an integer/);
  });
});

describe('planWorkloads', () => {
  it('lists the synthetic workloads and notes missing traces', () => {
    const plan = planWorkloads(true, null);
    expect(plan.workloads.map((w) => w.id)).toEqual([
      'pairs-64',
      'pairs-4k',
      'mix-5k',
      'mix-100k',
      'training',
    ]);
    expect(plan.notes[0]).toMatch(/Real-program traces skipped/);
  });
});

describe('hybridSplit', () => {
  const profile = (small: number, large: number): WorkloadProfile => ({
    peakLiveBytes: small + large,
    smallPeakLiveBytes: small,
    largePeakLiveBytes: large,
    totalAllocatedBytes: 0,
    allocs: 0,
    maxSize: 0,
  });

  it('splits in proportion to small and large peaks, within the capacity', () => {
    const [small, large] = hybridSplit(1 << 24, profile(1 << 20, 3 << 20));
    expect(small).toBe(1 << 22);
    expect(small + large).toBe(1 << 24);
  });

  it('gives each side at least 8 bytes and never exceeds the capacity', () => {
    const [small, large] = hybridSplit(1 << 24, profile(0, 1 << 20));
    expect(small).toBe(8);
    expect(large).toBe((1 << 24) - 8);
    const [s2, l2] = hybridSplit(64, profile(64, 0));
    expect([s2, l2]).toEqual([56, 8]);
  });
});
