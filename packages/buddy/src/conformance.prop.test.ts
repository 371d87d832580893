/**
 * The shared conformance suite of @allot/testkit, run on buddy heaps: one at an address above 2^40
 * over a power-of-two range, one over a range that is not a power of two (several maximal blocks),
 * and one over host memory so the suite can check byte patterns.
 */
import { hostSource } from '@allot/core';
import { describeConformance } from '@allot/testkit/vitest';
import { buddy } from './buddy';

describeConformance({
  name: 'buddy',
  create: () => buddy({ capacity: 1 << 16, base: 2 ** 40 }),
  capabilities: {
    // After freeing everything each segment (a maximal block) is one free block again.
    coalesces: true,
    // A request is rounded up to a power of two of at least its alignment, so a smaller free
    // block that happens to be aligned is not used: not complete in the suite's sense.
    complete: false,
    placement: 'any',
    maxRequestSize: 4096,
    alignments: [1, 8, 64],
  },
});

describeConformance({
  name: 'buddy (capacity not a power of two)',
  create: () => buddy({ capacity: 5 * 4096 + 3 * 64, base: 2 ** 33, minBlockSize: 64 }),
  capabilities: {
    coalesces: true,
    complete: false,
    placement: 'any',
    maxRequestSize: 4096,
    alignments: [1, 8, 64, 256],
  },
});

describeConformance({
  name: 'buddy (host memory)',
  create: () => {
    const source = hostSource();
    const region = source.acquire(1 << 16)!;
    return {
      allocator: buddy({ capacity: region.size, base: region.address, minBlockSize: 16 }),
      view: (address: number, size: number) => source.view(address, size),
    };
  },
  capabilities: { coalesces: true, complete: false, maxRequestSize: 2048, alignments: [1, 16, 64] },
});
