import { describe, expect, it } from 'vitest';
import { tinyFirstFit } from '../test/support/tiny-first-fit';
import type { Counter } from './counters';
import { memoryStats } from './memory-stats';
import { memorySummary } from './memory-summary';
import type { PoolStatsReport, PoolStatsSource } from './pool-stats';
import { withStats } from './with-stats';

const FAMILIES = [
  'active',
  'active_bytes',
  'allocated_bytes',
  'allocation',
  'inactive_split',
  'inactive_split_bytes',
  'requested_bytes',
  'reserved_bytes',
  'segment',
];
const FIGURES = ['allocated', 'current', 'freed', 'peak'];

function expectedKeys(pools: readonly string[]): string[] {
  const keys: string[] = [];
  for (const family of FAMILIES) {
    for (const pool of pools)
      for (const figure of FIGURES) keys.push(`${family}.${pool}.${figure}`);
  }
  for (const figure of FIGURES)
    keys.push(`oversize_allocations.${figure}`, `oversize_segments.${figure}`);
  keys.push(
    'max_split_size',
    'num_alloc_retries',
    'num_device_alloc',
    'num_device_free',
    'num_ooms',
    'num_sync_all_streams',
  );
  return keys.sort();
}

describe('memoryStats', () => {
  it("uses torch.cuda.memory_stats()'s key names, sorted", () => {
    const stats = withStats(tinyFirstFit({ capacity: 4096, granule: 64 }));
    expect(Object.keys(memoryStats(stats))).toEqual(expectedKeys(['all']));
  });

  it('fills the all pool from counters, usage and layout', () => {
    const stats = withStats(tinyFirstFit({ capacity: 4096, granule: 64 }));
    const a = stats.allocate(100)!;
    stats.allocate(10);
    stats.free(a);
    stats.allocate(8192); // fails
    const s = memoryStats(stats);
    expect(s['allocated_bytes.all.current']).toBe(64);
    expect(s['allocated_bytes.all.peak']).toBe(192);
    expect(s['allocated_bytes.all.allocated']).toBe(192);
    expect(s['allocated_bytes.all.freed']).toBe(128);
    expect(s['requested_bytes.all.current']).toBe(10);
    expect(s['requested_bytes.all.peak']).toBe(110);
    expect(s['active_bytes.all.current']).toBe(64);
    expect(s['allocation.all.current']).toBe(1);
    expect(s['allocation.all.allocated']).toBe(2);
    expect(s['reserved_bytes.all.current']).toBe(4096);
    expect(s['reserved_bytes.all.allocated']).toBe(4096);
    expect(s['segment.all.current']).toBe(1);
    expect(s['inactive_split_bytes.all.current']).toBe(4096 - 64);
    expect(s['inactive_split.all.current']).toBe(2);
    expect(s.num_ooms).toBe(1);
    expect(s.num_device_alloc).toBe(1);
    expect(s.max_split_size).toBe(-1);
    stats.resetPeak();
    stats.resetAccumulated();
    const after = memoryStats(stats);
    expect(after['allocated_bytes.all.peak']).toBe(64);
    expect(after['reserved_bytes.all.allocated']).toBe(0);
    expect(after.num_ooms).toBe(0);
  });

  it('takes small_pool/large_pool and scalar figures from a pool source', () => {
    const c = (current: number): Counter => ({
      current,
      peak: current * 2,
      allocated: current * 3,
      freed: 1,
    });
    const report: PoolStatsReport = {
      pools: {
        all: { reserved_bytes: c(22 << 20), segment: c(2) },
        small_pool: { reserved_bytes: c(2 << 20), allocated_bytes: c(512) },
        large_pool: { reserved_bytes: c(20 << 20) },
      },
      numAllocRetries: 3,
      numDeviceAlloc: 2,
      maxSplitSize: 64 << 20,
      allocatorSettings: { expandable_segments: true },
    };
    const pool = Object.assign(tinyFirstFit({ capacity: 4096 }), {
      poolStats: () => report,
    }) as ReturnType<typeof tinyFirstFit> & PoolStatsSource;
    const stats = withStats(pool);
    stats.allocate(100);
    const s = memoryStats(stats);
    expect(Object.keys(s)).toEqual(expectedKeys(['all', 'large_pool', 'small_pool']));
    expect(s['reserved_bytes.all.current']).toBe(22 << 20);
    expect(s['reserved_bytes.small_pool.peak']).toBe(4 << 20);
    expect(s['allocated_bytes.small_pool.current']).toBe(512);
    expect(s['allocated_bytes.large_pool.current']).toBe(0);
    expect(s['allocated_bytes.all.current']).toBe(104); // from the adaptor's counters
    expect(s.num_alloc_retries).toBe(3);
    expect(s.num_device_alloc).toBe(2);
    expect(s.num_device_free).toBe(1);
    expect(s.max_split_size).toBe(64 << 20);
    expect(stats.snapshot().allocatorSettings).toEqual({ expandable_segments: true });
    const summary = memorySummary(stats);
    expect(summary).toContain('from large pool');
    expect(memorySummary(stats, { abbreviated: true })).not.toContain('from large pool');
  });
});

describe('memorySummary', () => {
  it('prints a fixed-width table with every metric', () => {
    const stats = withStats(tinyFirstFit({ capacity: 16 << 20, granule: 64 }));
    const a = stats.allocate(3 << 20)!;
    stats.allocate(1000);
    stats.free(a);
    const text = memorySummary(stats);
    const lines = text.split('\n');
    for (const line of lines) expect(line.length).toBe(77);
    for (const label of [
      'Allocated memory',
      'Active memory',
      'Requested memory',
      'Reserved memory',
      'Non-releasable memory',
      'Allocations',
      'Active allocs',
      'Reserved segments',
      'Oversize allocations',
      'external fragmentation',
    ]) {
      expect(text).toContain(label);
    }
    expect(lines.find((l) => l.startsWith('| Reserved memory'))).toMatch(/16384 KiB/);
    expect(lines.find((l) => l.startsWith('| Allocated memory'))).toMatch(
      /\|\s+1 KiB \|\s+3073 KiB \|/,
    );
  });
});
