/**
 * The shared conformance suite of @allot/testkit, run on one worker's view of a shared heap: the
 * heap itself (the lock on every call), a thread cache in front of it, and both over managed memory
 * so the suite checks byte patterns.
 */
import { describeConformance } from '@allot/testkit/vitest';
import { sharedHeap } from './shared-heap';
import { threadCache } from './thread-cache';

const small = { capacity: 1 << 18, spanSize: 4096, pageSize: 256 } as const;

describeConformance({
  name: 'shared heap',
  create: () => {
    const heap = sharedHeap(small);
    return { allocator: heap, view: (address: number, size: number) => heap.view(address, size) };
  },
  capabilities: {
    // Spans go back to the buddy heap when their last object is freed, and buddy blocks merge.
    coalesces: true,
    // Requests are rounded to a class or to a power of two: a smaller aligned free block may go unused.
    complete: false,
    maxRequestSize: 4096,
    alignments: [1, 8, 64, 256],
  },
});

describeConformance({
  name: 'shared heap (capacity not a power of two, base above 2^40, no memory)',
  create: () =>
    sharedHeap({
      capacity: 5 * 4096 + 3 * 1024,
      base: 2 ** 40,
      spanSize: 1024,
      pageSize: 64,
      memory: 'none',
    }),
  capabilities: {
    coalesces: true,
    complete: false,
    maxRequestSize: 2048,
    alignments: [1, 16, 64, 256],
  },
});

describeConformance({
  name: 'thread cache',
  create: () => {
    const heap = sharedHeap({ ...small, memory: 'same' });
    const cache = threadCache(heap, { maxCachedBytes: 16 * 1024 });
    return { allocator: cache, view: (address: number, size: number) => cache.view(address, size) };
  },
  capabilities: {
    // A cache keeps the objects freed into it: spans stay cut, so usage differs from a fresh heap's.
    coalesces: false,
    restoresInitialUsage: false,
    complete: false,
    maxRequestSize: 4096,
    alignments: [1, 8, 64, 256],
  },
});
