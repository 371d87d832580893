import { describeCompaction, describeConformance } from '@allot/testkit/vitest';
import { bestFit, type FitMode } from './best-fit';

const CAPACITY = 1 << 16;
const BASE = 2 ** 40;

/** An allocator over a host buffer, so the suite also checks byte patterns. */
function subject(mode: FitMode) {
  const bytes = new Uint8Array(CAPACITY);
  return {
    allocator: bestFit({ capacity: CAPACITY, base: BASE, mode }),
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
  name: 'best-fit',
  create: () => subject('best'),
  capabilities: { ...shared, placement: 'best-fit' },
});

describeConformance({
  name: 'good-fit',
  create: () => subject('good'),
  capabilities: { ...shared, placement: 'any' },
});

describeConformance({
  name: 'worst-fit',
  create: () => subject('worst'),
  capabilities: { ...shared, placement: 'worst-fit' },
});

for (const mode of ['best', 'good', 'worst'] as const) {
  describeCompaction({
    name: `${mode}-fit`,
    create: () => bestFit({ capacity: 1 << 14, base: 2 ** 40 + 2 ** 33, mode }),
  });
}
