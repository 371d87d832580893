/**
 * The shared conformance suite of @allot/testkit, run on slab allocators: over a buddy heap above
 * 2^40 with the default classes, with the transformer classes, and over host memory so the suite
 * can check byte patterns. A slab keeps up to `maxEmptySlabs` empty slabs per class, so freeing
 * everything does not restore the initial usage, and it hands out whole objects of a class rather
 * than any block that fits: not complete in the suite's sense.
 */
import { buddy } from '@allot/buddy';
import { hostSource } from '@allot/core';
import { describeConformance } from '@allot/testkit/vitest';
import { slab } from './slab';

// A slab's layout lists every object of every slab it holds, and the suite reads the layout after
// each command: 60 commands a run keeps these suites to seconds.
const capabilities = {
  coalesces: false,
  complete: false,
  restoresInitialUsage: false,
  placement: 'any',
  maxCommands: 60,
} as const;

describeConformance({
  name: 'slab over buddy',
  create: () => slab({ upstream: buddy({ capacity: 1 << 24, base: 2 ** 40, minBlockSize: 4096 }) }),
  capabilities: { ...capabilities, maxRequestSize: 4096, alignments: [1, 8, 64, 256] },
});

describeConformance({
  name: 'slab over buddy (transformer classes, no empty slabs kept)',
  create: () =>
    slab({
      upstream: buddy({ capacity: 1 << 26, base: 2 ** 44, minBlockSize: 4096 }),
      sizeClasses: 'transformer',
      maxEmptySlabs: 0,
    }),
  capabilities: { ...capabilities, maxRequestSize: 64 * 1024, alignments: [1, 64, 256] },
});

describeConformance({
  name: 'slab (host memory)',
  create: () => {
    const source = hostSource();
    const region = source.acquire(1 << 22)!;
    const upstream = buddy({ capacity: region.size, base: region.address, minBlockSize: 4096 });
    return {
      allocator: slab({ upstream, slabSize: 16 * 1024 }),
      view: (address: number, size: number) => source.view(address, size),
    };
  },
  capabilities: { ...capabilities, maxRequestSize: 2048, alignments: [1, 16, 64] },
});
