import { bestFit } from '@allot/best-fit';
import { buddy } from '@allot/buddy';
import { allocateOrThrow, segregate } from '@allot/core';
import { slab } from '@allot/slab';
import { memorySummary, withStats } from '@allot/stats';

const KiB = 1024;
const MiB = 1024 * KiB;

// Small requests (≤ 64 KiB) become slab objects cut from a buddy heap; larger ones go to best fit
// over a range of their own. Statistics wrap the whole composition.
export function makeHeap() {
  return withStats(
    segregate({
      threshold: 64 * KiB,
      small: slab({ upstream: buddy({ capacity: 64 * MiB, minBlockSize: 4 * KiB }) }),
      large: bestFit({ capacity: 1024 * MiB, base: 2 ** 40 }),
    }),
  );
}

export function demo(): string {
  const heap = makeHeap();
  const tensor = allocateOrThrow(heap, 6 * MiB, 256); // best fit, 256-byte aligned
  const handles = Array.from({ length: 1000 }, () => heap.allocate(48)); // slab objects
  for (const h of handles) if (h !== null) heap.free(h);
  heap.free(tensor);
  return memorySummary(heap);
}
