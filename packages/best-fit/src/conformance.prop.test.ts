import { FitAllocator } from '@allot/blocks';
import type { Allocator } from '@allot/core';
import { describeCompaction, describeConformance } from '@allot/testkit/vitest';
import { bestFit, type FitMode } from './best-fit';
import { BinnedSizeIndex } from './exact-bins';

const CAPACITY = 1 << 16;
const BASE = 2 ** 40;

/** An allocator over a host buffer, so the suite also checks byte patterns. */
function subject(allocator: Allocator) {
  const bytes = new Uint8Array(CAPACITY);
  return {
    allocator,
    view: (address: number, size: number) => bytes.subarray(address - BASE, address - BASE + size),
  };
}

function fit(mode: FitMode) {
  return subject(bestFit({ capacity: CAPACITY, base: BASE, mode }));
}

const shared = {
  coalesces: true,
  coalescesImmediately: true,
  complete: true,
  maxRequestSize: 4096,
  alignments: [1, 8, 64, 256],
};

describeConformance({
  name: 'best-fit',
  create: () => fit('best'),
  capabilities: { ...shared, placement: 'best-fit' },
});

// Bins hold blocks up to 64 KiB, the whole range above: with bins up to 504 B instead, most free
// blocks go to the tree, and splits and merges move blocks between bins and tree.
describeConformance({
  name: 'best-fit, bins up to 63 granules',
  create: () =>
    subject(
      new FitAllocator(
        { capacity: CAPACITY, base: BASE },
        (table, granule) => new BinnedSizeIndex(table, granule, 63),
      ),
    ),
  capabilities: { ...shared, placement: 'best-fit' },
});

// Requests up to 64 KiB in 1 MiB: free blocks fill bins in every group of the bitmap, and the
// largest merged ones reach the tree.
describeConformance({
  name: 'best-fit, large blocks',
  create: () => ({ allocator: bestFit({ capacity: 1 << 20, base: BASE }) }),
  capabilities: { ...shared, maxRequestSize: 1 << 16, placement: 'best-fit' },
});

describeConformance({
  name: 'good-fit',
  create: () => fit('good'),
  capabilities: { ...shared, placement: 'any' },
});

describeConformance({
  name: 'worst-fit',
  create: () => fit('worst'),
  capabilities: { ...shared, placement: 'worst-fit' },
});

for (const mode of ['best', 'good', 'worst'] as const) {
  describeCompaction({
    name: `${mode}-fit`,
    create: () => bestFit({ capacity: 1 << 14, base: 2 ** 40 + 2 ** 33, mode }),
  });
}
