/**
 * The bump allocator: the floor of what any JS allocation can cost. `allocate` rounds the top up to
 * the alignment and moves it; `free` does nothing, so memory is never reused and its capacity
 * figure is the sum of every request (what "no allocator at all" costs in memory).
 */
import type { BenchAllocator } from './bench-allocator';

/** Bump allocator over `[base, base + capacity)` with a default alignment of 8 bytes. */
export function bump(
  capacity: number,
  base = 0,
  defaultAlignment = 8,
): BenchAllocator & { rewind(): void } {
  const end = base + capacity;
  let top = base;
  return {
    allocate(size: number, alignment = defaultAlignment): number | null {
      const remainder = top % alignment;
      const address = remainder === 0 ? top : top + (alignment - remainder);
      if (address + size > end) return null;
      top = address + size;
      return address;
    },
    free(_address: number): void {},
    rewind(): void {
      top = base;
    },
  };
}
