import { describeCompaction, describeConformance } from '@allot/testkit/vitest';
import { firstFit } from './first-fit';

const CAPACITY = 1 << 16;
const BASE = 2 ** 40;

/** An allocator over a host buffer, so the suite also checks byte patterns. */
function subject(nextFit: boolean) {
  const bytes = new Uint8Array(CAPACITY);
  return {
    allocator: firstFit({ capacity: CAPACITY, base: BASE, nextFit }),
    view: (address: number, size: number) => bytes.subarray(address - BASE, address - BASE + size),
  };
}

const shared = {
  coalesces: true,
  coalescesImmediately: true,
  complete: true,
  maxRequestSize: 4096,
  alignments: [1, 8, 64, 256],
};

describeConformance({
  name: 'first-fit',
  create: () => subject(false),
  capabilities: { ...shared, placement: 'first-fit' },
});

describeConformance({
  name: 'next-fit',
  create: () => subject(true),
  capabilities: { ...shared, placement: 'any' },
});

for (const nextFit of [false, true]) {
  describeCompaction({
    name: nextFit ? 'next-fit' : 'first-fit',
    create: () => firstFit({ capacity: 1 << 14, base: 2 ** 40 + 2 ** 33, nextFit }),
  });
}
