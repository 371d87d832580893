/**
 * The bump allocator with a lookup: the floor of an allocator that keeps its block records outside
 * the memory it manages, as every allot strategy does. `allocate` bumps the top and records the
 * block in an address table (`AddressMap` from `@allot/blocks`, the table the fit strategies use);
 * `free` must find the block again to give its bytes back, so it takes the record out of the table.
 * Memory is never reused, as with the plain bump allocator.
 *
 * Its records are keyed as the fit strategies key theirs: by granule index, `(address − base) /
 * alignment`, a small integer hashed with one multiplication (an address above 2^31 would take the
 * table's slower path for large keys, which no fit strategy takes below 16 GiB). Its cost over the
 * plain bump allocator is one probe of a hash table per event. On a random mix
 * that probe lands on a random bucket, so how much it grows from 5,000 to 100,000 live blocks is
 * what the machine's caches charge for one random lookup into a table of that many records, the
 * least any such allocator pays on a free.
 */
import { AddressMap } from '@allot/blocks';
import type { BenchAllocator } from './bench-allocator';
import { bump } from './bump';

/** Bump allocator over `[base, base + capacity)` whose `free` finds the block in an address table. */
export function bumpTable(capacity: number, base = 0, defaultAlignment = 8): BenchAllocator {
  const range = bump(capacity, base, defaultAlignment);
  const table = new AddressMap();
  // Multiplying by 1/alignment is exact (a power of two): every block start gets an integer key.
  const inverse = 1 / defaultAlignment;
  return {
    allocate(size: number, alignment?: number): number | null {
      // The table's values are int32: a larger request is refused like an exhausted range.
      if (size > 0x7fffffff) return null;
      const address = range.allocate(size, alignment);
      if (address !== null) table.set((address - base) * inverse, size);
      return address;
    },
    free(address: number): void {
      if (table.take((address - base) * inverse) < 0) {
        throw new Error(`bump+table: ${address} is not a live block`);
      }
    },
    reset(): void {
      table.clear();
      range.rewind();
    },
  };
}
