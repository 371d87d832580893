/**
 * The options of a buddy heap, their checks, and the configuration derived from them (the state
 * buffer's size among it; its layout is `state-layout.ts`).
 */
import { checkRange, InvalidArgumentError, isPowerOfTwo, log2OfPowerOfTwo } from '@allot/core';
import { CELL_WORDS, CELLS_OFFSET, NIL } from './state-layout';

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
