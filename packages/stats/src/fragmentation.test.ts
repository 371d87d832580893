import { readFileSync } from 'node:fs';
import type { Layout } from '@allot/core';
import { propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tracePath } from '../test/support/traces';
import { fragmentation } from './fragmentation';
import { histogramOf, sizeBucket } from './size-histogram';
import { type VmaDump, vmaDumpToLayout } from './vma-dump';

const KiB = 1024;

describe('fragmentation', () => {
  it('is zero for an empty allocator and for a single free range', () => {
    const f = fragmentation({
      segments: [
        { address: 0, size: 64 * KiB, blocks: [{ address: 0, size: 64 * KiB, free: true }] },
      ],
    });
    expect(f.externalFragmentation).toBe(0);
    expect(f.utilisation).toBe(0);
    expect(f.freeBytes).toBe(64 * KiB);
    expect(f.largestFreeBlock).toBe(64 * KiB);
    expect(f.inactiveSplitBytes).toBe(0);
    expect(fragmentation({ segments: [] }).externalFragmentation).toBe(0);
  });

  it('computes every figure on a hand-built checkerboard', () => {
    // 4 KiB live, 1 KiB free, 4 KiB live (requested 3000), 3 KiB free, 2 KiB free in a second, empty segment
    const layout: Layout = {
      segments: [
        {
          address: 0,
          size: 12 * KiB,
          blocks: [
            { address: 0, size: 4 * KiB, free: false, requestedSize: 4 * KiB },
            { address: 4 * KiB, size: 1 * KiB, free: true },
            { address: 5 * KiB, size: 4 * KiB, free: false, requestedSize: 3000 },
            { address: 9 * KiB, size: 3 * KiB, free: true },
          ],
        },
        {
          address: 1 << 20,
          size: 2 * KiB,
          blocks: [{ address: 1 << 20, size: 2 * KiB, free: true }],
        },
      ],
    };
    const f = fragmentation(layout);
    expect(f.segmentCount).toBe(2);
    expect(f.totalBytes).toBe(14 * KiB);
    expect(f.allocatedBytes).toBe(8 * KiB);
    expect(f.requestedBytes).toBe(4 * KiB + 3000);
    expect(f.freeBytes).toBe(6 * KiB);
    expect(f.largestFreeBlock).toBe(3 * KiB);
    expect(f.externalFragmentation).toBeCloseTo(1 - 3 / 6);
    expect(f.internalWaste).toBe(4 * KiB - 3000);
    expect(f.internalWasteRatio).toBeCloseTo((4 * KiB - 3000) / (8 * KiB));
    expect(f.utilisation).toBeCloseTo(8 / 14);
    expect(f.inactiveSplitBytes).toBe(4 * KiB); // the 2 KiB segment holds nothing live
    expect(f.inactiveSplitCount).toBe(2);
    expect(f.overheadBytes).toBe(0);
    expect(f.liveCount).toBe(2);
    expect(f.freeBlockCount).toBe(3);
    expect(f.freeRangeHistogram.buckets).toEqual([
      { lower: 512, upper: 1024, count: 1, bytes: 1024 },
      { lower: 1024, upper: 2048, count: 1, bytes: 2048 },
      { lower: 2048, upper: 4096, count: 1, bytes: 3072 },
    ]);
  });

  it('counts bytes no block covers as overhead', () => {
    const f = fragmentation({
      segments: [{ address: 0, size: 100, blocks: [{ address: 0, size: 60, free: false }] }],
    });
    expect(f.overheadBytes).toBe(40);
    expect(f.requestedBytes).toBe(60);
  });

  it('handles addresses and sizes far above 2^32', () => {
    const base = 2 ** 47;
    const f = fragmentation({
      segments: [
        {
          address: base,
          size: 2 ** 40,
          blocks: [
            { address: base, size: 2 ** 39, free: true },
            { address: base + 2 ** 39, size: 2 ** 39, free: false },
          ],
        },
      ],
    });
    expect(f.largestFreeBlock).toBe(2 ** 39);
    expect(f.freeRangeHistogram.buckets).toEqual([
      { lower: 2 ** 38, upper: 2 ** 39, count: 1, bytes: 2 ** 39 },
    ]);
  });

  it('matches the totals of the VMA sample dump, from its sub-allocations', (context) => {
    const path = tracePath('vma-json-dump/Sample.json');
    if (!path) {
      context.skip(
        '../shared/traces/vma-json-dump/Sample.json is absent: skipping the VMA fixture',
      );
      return;
    }
    const dump = JSON.parse(readFileSync(path, 'utf8')) as VmaDump;
    const f = fragmentation(vmaDumpToLayout(dump));
    expect(f.segmentCount).toBe(dump.Total.BlockCount);
    expect(f.totalBytes).toBe(dump.Total.BlockBytes);
    expect(f.liveCount).toBe(dump.Total.AllocationCount);
    expect(f.allocatedBytes).toBe(dump.Total.AllocationBytes);
    expect(f.freeBlockCount).toBe(dump.Total.UnusedRangeCount);
    expect(f.largestFreeBlock).toBe(dump.Total.UnusedRangeSizeMax);
    expect(f.freeBytes).toBe(dump.Total.BlockBytes - dump.Total.AllocationBytes);
    expect(f.externalFragmentation).toBeCloseTo(1 - 33550336 / 127990628, 12);
    expect(f.utilisation).toBeCloseTo(73401500 / 201392128, 12);
    expect(f.freeRangeHistogram.count).toBe(11);
    expect(f.freeRangeHistogram.buckets[0]!.upper).toBeGreaterThanOrEqual(
      dump.Total.UnusedRangeSizeMin!,
    );
  });
});

describe('size buckets', () => {
  it('puts every size in (2^(k-1), 2^k]', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (size) => {
        const k = sizeBucket(size);
        expect(size).toBeLessThanOrEqual(2 ** k);
        if (k > 0) expect(size).toBeGreaterThan(2 ** (k - 1));
      }),
      propertyParameters({}),
    );
    expect([1, 2, 3, 4, 5, 2 ** 32, 2 ** 32 + 1, 2 ** 53].map(sizeBucket)).toEqual([
      0, 1, 2, 2, 3, 32, 33, 53,
    ]);
  });

  it('sums counts and bytes', () => {
    const h = histogramOf([1, 8, 9, 16, 1000]);
    expect(h.count).toBe(5);
    expect(h.bytes).toBe(1034);
    expect(h.buckets.map((b) => [b.upper, b.count])).toEqual([
      [1, 1],
      [8, 1],
      [16, 2],
      [1024, 1],
    ]);
  });
});
