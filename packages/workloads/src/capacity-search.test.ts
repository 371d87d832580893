import { describe, expect, it } from 'vitest';
import { searchCapacity } from './capacity-search';

describe('searchCapacity', () => {
  it('finds the threshold of a monotonic probe within the precision', () => {
    const needed = 123_457;
    const result = searchCapacity({
      peakLiveBytes: 100_000,
      maxCapacity: 2 ** 48,
      probe: (capacity) => (capacity >= needed ? 'fits' : 'fails'),
      relativePrecision: 0.001,
    });
    expect(result.status).toBe('exact');
    expect(result.capacity).toBeGreaterThanOrEqual(needed);
    expect(result.capacity! - needed).toBeLessThanOrEqual(needed * 0.001 + 8);
    expect(result.capacity! % 8).toBe(0);
    expect(result.largestFailure).toBeLessThan(needed);
  });

  it('needs a single probe when peak live bytes already fit', () => {
    const result = searchCapacity({
      peakLiveBytes: 4096,
      maxCapacity: 2 ** 48,
      probe: () => 'fits',
    });
    expect(result).toMatchObject({ status: 'exact', capacity: 4096, probes: 1 });
  });

  it('reports none when even the maximum fails', () => {
    const probed: number[] = [];
    const result = searchCapacity({
      peakLiveBytes: 1000,
      maxCapacity: 10_000,
      probe: (capacity) => {
        probed.push(capacity);
        return 'fails';
      },
    });
    expect(result.status).toBe('none');
    expect(result.capacity).toBeNull();
    expect(Math.max(...probed)).toBe(10_000);
  });

  it('returns an upper bound when the deadline passes during the bisection', () => {
    let clock = 0;
    const result = searchCapacity({
      peakLiveBytes: 1000,
      maxCapacity: 2 ** 48,
      probe: (capacity) => {
        clock += 1;
        return capacity >= 1_000_000 ? 'fits' : 'fails';
      },
      now: () => clock,
      deadline: 12,
    });
    expect(result.status).toBe('upper-bound');
    expect(result.capacity).toBeGreaterThanOrEqual(1_000_000);
  });

  it('stops when a probe times out', () => {
    expect(
      searchCapacity({ peakLiveBytes: 1000, maxCapacity: 2 ** 48, probe: () => 'timeout' }).status,
    ).toBe('timeout');
  });
});
