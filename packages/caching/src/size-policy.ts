/**
 * The size policy of PyTorch's caching allocator, in one place: how a request is rounded, which pool
 * (small or large) serves it, how large a segment a cache miss acquires, when a block's remainder is
 * split off, and which cached blocks an oversize rule keeps from serving a request.
 *
 * ```
 *  request ──► round: 512 B steps, or roundup_power2_divisions steps above 512 B × divisions
 *     │
 *     ├─ ≤ 1 MiB ──► small pool, 2 MiB segments;         split any remainder ≥ 512 B
 *     └─ > 1 MiB ──► large pool: < 10 MiB ─► 20 MiB segment;  ≥ 10 MiB ─► rounded to 2 MiB
 *                    split a remainder > 1 MiB when the request is < max_split_size
 *                    (expandable segments: any remainder ≥ 512 B)
 * ```
 *
 * Everything here is a plain function of sizes and knobs; the pool calls them on its hot path.
 */
import { floorLog2 } from '@allot/blocks';
import {
  LARGE_BUFFER,
  MIN_BLOCK_SIZE,
  MIN_LARGE_ALLOC,
  ROUND_LARGE,
  ROUNDUP_FIRST_LOG2,
  ROUNDUP_INTERVALS,
  SMALL_BUFFER,
  SMALL_SIZE,
} from './constants';

/** Divisions that apply to `size` bytes. */
export function divisionsFor(size: number, divisions: readonly number[]): number {
  const log = floorLog2(size);
  const index = log > ROUNDUP_FIRST_LOG2 ? log - ROUNDUP_FIRST_LOG2 : 0;
  return divisions[Math.min(index, ROUNDUP_INTERVALS - 1)]!;
}

/** `size` rounded up to the next of `divisions` equal steps between two powers of two. */
export function roundUpToDivision(size: number, divisions: number): number {
  const floor = 2 ** floorLog2(size);
  if (floor === size) return size;
  const step = floor / divisions;
  if (step < 1) return floor * 2;
  const down = Math.floor(size / step) * step;
  return down === size ? size : down + step;
}

/**
 * The block size a request of `size` bytes gets: at least 512 B; a multiple of 512 B, or, where
 * `roundup_power2_divisions` applies and `size` exceeds 512 B × divisions, the next division.
 */
export function roundSize(size: number, divisions: readonly number[]): number {
  if (size <= MIN_BLOCK_SIZE) return MIN_BLOCK_SIZE;
  const d = divisionsFor(size, divisions);
  if (d > 1 && size > MIN_BLOCK_SIZE * d) return roundUpToDivision(size, d);
  return Math.ceil(size / MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE;
}

/** Size of the segment a cache miss for a block of `size` bytes acquires. */
export function allocationSize(size: number): number {
  if (size <= SMALL_SIZE) return SMALL_BUFFER;
  if (size < MIN_LARGE_ALLOC) return LARGE_BUFFER;
  return Math.ceil(size / ROUND_LARGE) * ROUND_LARGE;
}

/**
 * {@link roundSize} with the 512 B rule alone (no divisions apply): the pool's fast path when every
 * interval has at most one division.
 */
export function roundPlain(size: number): number {
  return size <= MIN_BLOCK_SIZE
    ? MIN_BLOCK_SIZE
    : Math.ceil(size / MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE;
}

/** Whether a rounded size is served by the small pool. */
export function isSmallSize(rounded: number): boolean {
  return rounded <= SMALL_SIZE;
}

/**
 * Whether a block of `rounded + remaining` bytes serving `rounded` has its remainder split off:
 * in the small pool and in expandable segments (`anyRemainder`) a remainder of at least 512 B, in
 * the large pool a remainder over 1 MiB when the request is under `maxSplitSize`.
 */
export function splitsRemainder(
  anyRemainder: boolean,
  rounded: number,
  remaining: number,
  maxSplitSize: number,
): boolean {
  return anyRemainder
    ? remaining >= MIN_BLOCK_SIZE
    : rounded < maxSplitSize && remaining > SMALL_SIZE;
}

/**
 * The oversize rule of `get_free_block`: whether a cached block of `size` bytes may not serve a
 * request of `rounded` bytes. Below `maxSplitSize` a request never takes an oversize block; from it
 * on, a block may exceed the request by less than `maxNonSplitRounding`.
 */
export function refusedAsOversize(
  rounded: number,
  size: number,
  maxSplitSize: number,
  maxNonSplitRounding: number,
): boolean {
  return rounded < maxSplitSize ? size >= maxSplitSize : size >= rounded + maxNonSplitRounding;
}

/** Bytes a segment for a block of `rounded` bytes at `align` must hold: the worst-case padding. */
export function paddedSize(rounded: number, align: number): number {
  return align > MIN_BLOCK_SIZE ? rounded + align - MIN_BLOCK_SIZE : rounded;
}
