import type { Allocator } from './allocator';
import { OutOfMemoryError } from './errors';

/**
 * Like `allocator.allocate`, but exhaustion throws `OutOfMemoryError` carrying the allocator's
 * figures, and a message that tells fragmentation from exhaustion.
 */
export function allocateOrThrow(allocator: Allocator, size: number, alignment?: number): number {
  const address = allocator.allocate(size, alignment);
  if (address !== null) return address;
  throw outOfMemoryFor(allocator, size, alignment);
}

/** The `OutOfMemoryError` that describes a failed request on `allocator`, from its usage. */
export function outOfMemoryFor(
  allocator: Allocator,
  size: number,
  alignment?: number,
): OutOfMemoryError {
  const usage = allocator.usage();
  return new OutOfMemoryError({
    requested: size,
    alignment: Math.max(alignment ?? allocator.alignment, allocator.alignment),
    capacity: usage.capacity,
    freeBytes: usage.freeBytes,
    largestFreeBlock: usage.largestFreeBlock,
  });
}
