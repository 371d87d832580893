/**
 * The allocator contract every allot strategy and adaptor speaks.
 *
 * Addresses and sizes are plain numbers: byte offsets or real pointers, exact up to 2^53. No
 * implementation may apply 32-bit bitwise operators to them. Exhaustion is `null`; misuse throws
 * a typed error (see `errors.ts`) before any state changes.
 */

/** Figures every allocator can give cheaply (O(1) for the placement strategies). */
export interface Usage {
  /** Bytes this allocator manages (for a growing pool: bytes reserved from its source). */
  readonly capacity: number;
  /** Sum of the usable sizes of live blocks, in bytes. */
  readonly allocatedBytes: number;
  /** Bytes in free blocks that a later request could receive. */
  readonly freeBytes: number;
  /**
   * Bytes that are neither allocated nor free (slab tails, rounding a strategy keeps for itself).
   * `allocatedBytes + freeBytes + overheadBytes === capacity` always holds.
   */
  readonly overheadBytes: number;
  /** Size of the largest free block, in bytes (0 when nothing is free). */
  readonly largestFreeBlock: number;
  /** Number of live blocks. */
  readonly liveCount: number;
  /** Number of free blocks (free ranges) the strategy tracks. */
  readonly freeBlockCount: number;
}

/** One block of a layout walk. */
export interface LayoutBlock {
  /** First byte of the block. */
  readonly address: number;
  /** Size of the block in bytes (its usable size when live). */
  readonly size: number;
  /** `true` for a free range, `false` for a live block. */
  readonly free: boolean;
  /** Bytes the caller asked for, where the strategy records it. */
  readonly requestedSize?: number;
}

/** A contiguous range of memory and the blocks inside it, in address order. */
export interface LayoutSegment {
  readonly address: number;
  readonly size: number;
  readonly blocks: readonly LayoutBlock[];
  /** Which pool or child allocator the segment belongs to (for example `small`, `large`). */
  readonly pool?: string;
}

/** Every segment an allocator manages and the blocks inside them: the input of fragmentation figures. */
export interface Layout {
  readonly segments: readonly LayoutSegment[];
}

export interface Allocator {
  /** Alignment, in bytes (a power of two), that every returned address has at least. */
  readonly alignment: number;
  /**
   * Returns the address of a block of at least `size` bytes, aligned to `alignment` (a power of
   * two; defaults to {@link Allocator.alignment}), or `null` when nothing fits.
   *
   * @throws InvalidArgumentError when `size` is not a positive safe integer or `alignment` is not a
   * power of two. State is unchanged.
   */
  allocate(size: number, alignment?: number): number | null;
  /**
   * Gives a live block back.
   *
   * @throws InvalidFreeError when `address` is not the start of a live block issued by this
   * allocator (double free, interior pointer, foreign address). State is unchanged.
   */
  free(address: number): void;
  /**
   * Usable size of a live block, in bytes (at least what was requested).
   *
   * @throws InvalidArgumentError when `address` is not the start of a live block.
   */
  usableSize(address: number): number;
  /** Whether `address` is the start of a live block issued by this allocator. */
  owns(address: number): boolean;
  /** Current figures; see {@link Usage}. */
  usage(): Usage;
  /** Forgets every block: the allocator returns to its initial state. */
  reset(): void;
  /** Optional layout walk: every segment and block, for statistics and visualisation. */
  layout?(): Layout;
}

/** An allocator that wraps another one, RMM-style: blocks always go back to the one that issued them. */
export interface Adaptor<Upstream extends Allocator = Allocator> extends Allocator {
  readonly upstream: Upstream;
}
