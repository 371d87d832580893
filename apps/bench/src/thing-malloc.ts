/**
 * `@thi.ng/malloc` as a bench row. Its `MemPool` lives inside an ArrayBuffer: block headers (8 bytes
 * each) and its own state (28 bytes, then aligned) are stored in the managed memory, and addresses
 * are 32-bit. The mapping:
 *
 * - capacity: the ArrayBuffer's byte length, rounded up to a multiple of 8 and at most
 *   {@link THING_MAX_CAPACITY}; its capacity figure therefore includes its headers, as it should;
 * - `allocate(size)`: `malloc(size)`, where 0 (its failure value) becomes `null`; alignment is the
 *   pool's, 8 bytes (no bench workload asks for more);
 * - `free(address)`: `free(address)`;
 * - options: the defaults (`compact` and `split` on, `minSplit` 16).
 */
import type { BenchAllocator } from './bench-allocator';

/** Largest pool: addresses and the pool's end are stored as 32-bit unsigned integers. */
export const THING_MAX_CAPACITY = 2 ** 32 - 8;

interface MemPoolLike {
  malloc(bytes: number): number;
  free(pointer: number): boolean;
}

type MemPoolConstructor = new (options: { size: number; align: number }) => MemPoolLike;

/** Wraps a `MemPool` constructor (loaded dynamically) as a bench allocator factory. */
export function thingMalloc(MemPool: MemPoolConstructor): (capacity: number) => BenchAllocator {
  return (capacity: number) => {
    const size = Math.min(THING_MAX_CAPACITY, Math.ceil(capacity / 8) * 8);
    const pool = new MemPool({ size, align: 8 });
    return {
      allocate(bytes: number): number | null {
        const address = pool.malloc(bytes);
        return address === 0 ? null : address;
      },
      free(address: number): void {
        pool.free(address);
      },
    };
  };
}
