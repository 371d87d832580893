import { describeConformance } from '../src/vitest';
import { referenceAllocator } from './reference-allocator';

describeConformance({
  name: 'reference first fit',
  create: () => referenceAllocator({ capacity: 1 << 14 }),
  capabilities: { coalesces: true, complete: true, placement: 'first-fit', maxRequestSize: 2048 },
});

describeConformance({
  name: 'reference first fit on host memory above 2^32',
  create: () => {
    const base = 2 ** 40;
    const bytes = new Uint8Array(1 << 14);
    return {
      allocator: referenceAllocator({ capacity: bytes.length, base }),
      view: (address: number, size: number) =>
        bytes.subarray(address - base, address - base + size),
    };
  },
  capabilities: { coalesces: true, complete: true, placement: 'first-fit', maxRequestSize: 2048 },
});
