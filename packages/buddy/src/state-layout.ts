/**
 * The layout of a buddy heap's state buffer, and the checks on its options.
 *
 * Everything a buddy heap knows lives in one `ArrayBuffer` or `SharedArrayBuffer`, so a second
 * view attached to the same buffer (in this thread or, under a lock the caller holds, in another
 * worker) sees the same heap:
 *
 * ```
 *  byte 0                                    HEADER_BYTES                HEADER_BYTES + 12 × units
 *  ┌─────────────┬───────────────┬────────────┬─────────────────────────────────────────────┐
 *  │ words (u32) │ figures (f64) │ free lists │ cells: 3 × u32 per unit                     │
 *  │ magic, ver, │ base, capac., │ head and   │ [tag, next, prev]   at the head of a free   │
 *  │ lock, mask, │ allocated,    │ count per  │ [tag, requested lo, requested hi]  … live   │
 *  │ orders,units│ requested, …  │ order      │ [0, -, -]           inside a block          │
 *  └─────────────┴───────────────┴────────────┴─────────────────────────────────────────────┘
 * ```
 *
 * A unit is `minBlockSize` bytes; block indices count units from `base`. A tag holds the block's
 * order and a FREE or LIVE bit. Keeping a unit's tag and links in one 12-byte cell means a buddy
 * check and the list update that follows touch one cache line. State costs 12 bytes per unit plus
 * the header, so pick `minBlockSize` to keep `capacity / minBlockSize` reasonable (it must stay
 * below 2^32 − 1, the free-list sentinel).
 */
import { checkRange, InvalidArgumentError, isPowerOfTwo, log2OfPowerOfTwo } from '@allot/core';

/** Identifies an initialised buddy state buffer (`'BDDY'`). */
export const STATE_MAGIC = 0x42444459;
/** Bumped whenever the layout below changes; `attach` refuses other versions. */
export const STATE_VERSION = 2;

/** Most orders a heap can have: block indices are below 2^32, so orders run 0..31. */
export const MAX_ORDERS = 32;
/** Sentinel for "no block" in the free lists (block indices must stay below it). */
export const NIL = 0xffffffff;

/** Indices into the `Uint32Array` over the header. */
export const WORD_MAGIC = 0;
export const WORD_VERSION = 1;
/** Reserved for the owner of a shared heap (an `Int32Array` lock word); this package never touches it. */
export const WORD_LOCK = 2;
/** Bit k set ⇔ the free list of order k is non-empty. */
export const WORD_NON_EMPTY = 3;
/** log2(minBlockSize). */
export const WORD_MIN_ORDER = 4;
/** Order of the largest block, in units (maxBlockSize = minBlockSize × 2^maxOrder). */
export const WORD_MAX_ORDER = 5;
/** Number of units covered (capacity / minBlockSize, rounded down). */
export const WORD_UNITS = 6;
/**
 * The deferred block: 1 + the unit index of the one freed block whose merge is put off (see
 * `buddy.ts`), or 0 when there is none. It sits on its order's free list like any free block.
 */
export const WORD_DEFERRED = 7;
/** Number of 32-bit words before the figures (bytes 0..31). */
const WORD_COUNT = 8;

/** Indices into the `Float64Array` over the header (figures in bytes unless said otherwise). */
const FIGURE_FIRST = WORD_COUNT / 2;
export const FIGURE_BASE = FIGURE_FIRST;
export const FIGURE_CAPACITY = FIGURE_FIRST + 1;
/** Sum of usable (rounded) sizes of live blocks. */
export const FIGURE_ALLOCATED = FIGURE_FIRST + 2;
/** Sum of requested sizes of live blocks. */
export const FIGURE_REQUESTED = FIGURE_FIRST + 3;
/** Number of live blocks. (Free bytes are the rest of the units; free blocks, the list counts.) */
export const FIGURE_LIVE_COUNT = FIGURE_FIRST + 4;
/**
 * Changes to the free lists other than the deferred block's own come and go: a view may reuse what
 * it worked out about the deferred block while this is unchanged.
 */
export const FIGURE_VERSION = FIGURE_FIRST + 5;
/** One past the last f64 slot of the header (one spare slot). */
const FIGURE_END = FIGURE_FIRST + 7;

/** Byte offset of the free-list heads (`Uint32Array`, one per order). */
export const HEADS_OFFSET = FIGURE_END * 8;
/** Byte offset of the per-order free-block counts (`Uint32Array`, one per order). */
export const COUNTS_OFFSET = HEADS_OFFSET + MAX_ORDERS * 4;
/** Bytes of header before the per-unit cells. */
export const HEADER_BYTES = COUNTS_OFFSET + MAX_ORDERS * 4;
/** Byte offset of the per-unit cells (`Uint32Array`, {@link CELL_WORDS} words per unit). */
export const CELLS_OFFSET = HEADER_BYTES;
/** Words per unit: tag, then next and prev (free block) or requested size low and high (live block). */
export const CELL_WORDS = 3;
/** Cell word: the tag. */
export const CELL_TAG = 0;
/** Cell word: next free block of the same order, or the low 32 bits of the requested size. */
export const CELL_NEXT = 1;
/** Cell word: previous free block of the same order, or the requested size divided by 2^32. */
export const CELL_PREV = 2;

/** Tag bit: the unit starts a free block. */
export const TAG_FREE = 0x40;
/** Tag bit: the unit starts a live block. */
export const TAG_LIVE = 0x80;
/** Tag bits holding the block's order. */
export const TAG_ORDER_MASK = 0x3f;

/** Options of a buddy heap. */
export interface BuddyOptions {
  /** Bytes managed, from `base`. A tail shorter than `minBlockSize` is left unused. */
  readonly capacity: number;
  /**
   * Address of the first byte. Blocks are aligned to their size relative to `base`; for absolute
   * alignment up to `maxBlockSize`, align `base` to `maxBlockSize` (a request whose alignment
   * exceeds `base`'s own alignment returns `null`).
   * @defaultValue 0
   */
  readonly base?: number;
  /**
   * Smallest block, in bytes (a power of two): the unit of block indices and of state (12 bytes of
   * state per unit).
   * @defaultValue 16, or for capacities above 256 MiB the smallest power of two that keeps
   * `capacity / minBlockSize` ≤ 2^24 (at most 192 MiB of state), and at most `capacity`
   */
  readonly minBlockSize?: number;
  /**
   * Largest block, in bytes (a power of two between `minBlockSize` and `capacity`). The range is
   * covered by as many maximal blocks as fit, then by smaller ones down to `minBlockSize`.
   * @defaultValue the largest power of two ≤ `capacity`
   */
  readonly maxBlockSize?: number;
  /**
   * Buffer to keep the state in, at least {@link buddyStateBytes} long. It is initialised (its
   * previous contents are lost); use `buddy.attach` to open an existing one.
   * @defaultValue a new `ArrayBuffer`
   */
  readonly state?: SharedArrayBuffer | ArrayBuffer;
}

/** The checked, derived configuration of a heap. */
export interface BuddyConfig {
  readonly base: number;
  readonly capacity: number;
  readonly minBlockSize: number;
  readonly maxBlockSize: number;
  /** log2(minBlockSize). */
  readonly minOrder: number;
  /** Order of the largest block, in units. */
  readonly maxOrder: number;
  /** Units covered. */
  readonly units: number;
  /** Total bytes of state. */
  readonly stateBytes: number;
}

/** Checks `options` and derives the heap's configuration. Throws `InvalidArgumentError`. */
export function resolveConfig(options: BuddyOptions): BuddyConfig {
  const { capacity, base } = checkRange(options);
  const minBlockSize = options.minBlockSize ?? defaultMinBlockSize(capacity);
  if (!isPowerOfTwo(minBlockSize)) {
    throw new InvalidArgumentError('minBlockSize', minBlockSize, 'a power of two number of bytes');
  }
  if (minBlockSize > capacity) {
    throw new InvalidArgumentError('minBlockSize', minBlockSize, `at most capacity (${capacity})`);
  }
  const maxBlockSize = options.maxBlockSize ?? largestPowerOfTwoAtMost(capacity);
  if (!isPowerOfTwo(maxBlockSize) || maxBlockSize < minBlockSize || maxBlockSize > capacity) {
    throw new InvalidArgumentError(
      'maxBlockSize',
      maxBlockSize,
      `a power of two between minBlockSize (${minBlockSize}) and capacity (${capacity})`,
    );
  }
  const units = Math.floor(capacity / minBlockSize);
  if (units >= NIL) {
    throw new InvalidArgumentError(
      'minBlockSize',
      minBlockSize,
      `at least capacity / (2^32 − 1) (${units} units is too many)`,
    );
  }
  const minOrder = log2OfPowerOfTwo(minBlockSize);
  const maxOrder = log2OfPowerOfTwo(maxBlockSize) - minOrder;
  // units < 2^32 keeps maxOrder ≤ 31, so the non-empty mask fits one 32-bit word.
  return {
    base,
    capacity,
    minBlockSize,
    maxBlockSize,
    minOrder,
    maxOrder,
    units,
    stateBytes: CELLS_OFFSET + units * CELL_WORDS * 4,
  };
}

/**
 * Bytes of state buffer a buddy heap with these options needs: a header of
 * {@link HEADER_BYTES} bytes, then 12 bytes per unit of `minBlockSize`.
 *
 * @throws InvalidArgumentError when the options are invalid.
 */
export function buddyStateBytes(options: Omit<BuddyOptions, 'state'>): number {
  return resolveConfig(options).stateBytes;
}

/** Smallest block by default, in bytes. */
const DEFAULT_MIN_BLOCK_SIZE = 16;
/**
 * Most units the default `minBlockSize` allows: more units mean finer blocks but 12 bytes of state
 * each; 2^24 units keep the state of even a 2^48-byte heap at 192 MiB.
 */
const DEFAULT_MAX_UNITS = 2 ** 24;

/** The default `minBlockSize` for `capacity` bytes (see {@link BuddyOptions.minBlockSize}). */
export function defaultMinBlockSize(capacity: number): number {
  let size = DEFAULT_MIN_BLOCK_SIZE;
  while (capacity / size > DEFAULT_MAX_UNITS) size *= 2;
  return Math.min(size, largestPowerOfTwoAtMost(capacity));
}

/** Largest power of two ≤ `value` (value ≥ 1), exact up to 2^53. */
export function largestPowerOfTwoAtMost(value: number): number {
  let p = 2 ** Math.floor(Math.log2(value));
  while (p > value) p /= 2;
  while (p * 2 <= value) p *= 2;
  return p;
}

/** Largest power of two dividing `value` (Infinity for 0), exact up to 2^53. */
export function powerOfTwoDividing(value: number): number {
  if (value === 0) return Number.POSITIVE_INFINITY;
  let p = 1;
  while (value % (p * 2) === 0) p *= 2;
  return p;
}
