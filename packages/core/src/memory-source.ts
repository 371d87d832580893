/**
 * Memory sources obtain real memory in large regions (segments) and give it back. Placement
 * strategies never touch memory; pools such as `@allot/caching` grow over a source.
 */

/** A contiguous range of memory obtained from a source. */
export interface Region {
  /** Address of the first byte (a pointer, or an address the source assigned). */
  readonly address: number;
  /** Size in bytes. May grow when the source supports `grow`. */
  readonly size: number;
}

export interface MemorySource<R extends Region = Region> {
  /** What the memory is: `host`, `cuda-device`, `cuda-pinned`, `numa`, ... */
  readonly kind: string;
  /** Region sizes are multiples of this many bytes; `acquire` rounds up to it. */
  readonly granularity: number;
  /** Whether the CPU can read and write the memory through `view`. */
  readonly hostAccessible: boolean;
  /**
   * A new region of at least `size` bytes, or `null` when the source has no more memory.
   * @throws InvalidArgumentError when `size` is not a positive safe integer.
   */
  acquire(size: number): R | null;
  /**
   * Gives a region back. Every view of it becomes invalid.
   * @throws InvalidArgumentError when `region` is not live in this source.
   */
  release(region: R): void;
  /**
   * Grows a region in place to `newSize` bytes (its address does not change); `false` when it
   * cannot. Present only on sources that can (expandable segments).
   */
  grow?(region: R, newSize: number): boolean;
  /**
   * Unmaps `size` bytes at `offset` inside a grown region: the pages go back to the device, the
   * address range stays the region's (PyTorch's expandable segments under memory pressure). Present
   * only on sources that can; the range is whole pages of the region, mapped now.
   */
  unmap?(region: R, offset: number, size: number): void;
  /**
   * Maps `size` bytes at `offset` again after {@link unmap}; `false` when the device has no memory
   * for them (nothing changes then).
   */
  remap?(region: R, offset: number, size: number): boolean;
  /**
   * Bytes `[address, address + size)` as a typed view. Present on host-accessible sources.
   * @throws InvalidArgumentError when the range does not lie inside one live region.
   */
  view?(address: number, size: number): Uint8Array;
  /** Bytes held in live regions now. */
  reservedBytes(): number;
}
