import { larson } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { measureRow } from './analysis/measure';
import { findRow, profileOf } from './analysis/registry';
import { capacities } from './capacity';

describe('capacities', () => {
  const trace = larson({ operations: 3000, seed: 4 });
  const rows = ['first-fit', 'best-fit', 'buddy', 'caching'].map((name) => findRow(name)!);

  it('finds, per allocator, a capacity that fits and is at least peak live bytes', () => {
    const results = capacities(trace, rows);
    const peak = profileOf(trace).peakLiveBytes;
    for (const result of results) {
      expect(result.search.status, result.allocator).toBe('exact');
      expect(result.search.capacity!).toBeGreaterThanOrEqual(peak);
      const row = findRow(result.allocator)!;
      const check = measureRow(trace, row, profileOf(trace), result.search.capacity, {
        skipTiming: true,
      });
      expect(check.failures, result.allocator).toBe(0);
    }
    const bestFit = results.find((r) => r.allocator === 'best-fit')!;
    expect(bestFit.ratio).toBeLessThan(1.3);
  });
});
