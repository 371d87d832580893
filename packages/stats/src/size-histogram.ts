/**
 * Power-of-two size histograms: bucket `k` holds sizes in `(2^(k-1), 2^k]` (bucket 0 holds sizes up
 * to 1), so a bucket's upper bound is inclusive, like Prometheus' `le`. Used for request sizes
 * (counted on the hot path into a `Float64Array`) and for free-range sizes (from a layout).
 *
 * The bucket of a size is the base-2 logarithm of `size − 1`, rounded down, plus one. Below 2^32 it
 * comes from `Math.clz32`, which is exact there; above, from the high 32-bit word obtained by
 * division, so no size is ever truncated.
 */
import { TWO_POW_32 } from '@allot/core';

/** Buckets kept: enough for every safe integer (2^53). */
export const HISTOGRAM_BUCKETS = 64;

/** Bucket of a size: `ceil(log2(size))`, the smallest `k` with `size <= 2^k`; sizes up to 1 give 0. */
export function sizeBucket(size: number): number {
  if (size <= 1) return 0;
  const below = size - 1; // exact for every safe integer
  if (below < TWO_POW_32) return 32 - Math.clz32(below);
  return 64 - Math.clz32(Math.floor(below / TWO_POW_32));
}

/** One bucket of a histogram. */
export interface HistogramBucket {
  /** Sizes in the bucket are greater than this, in bytes (`upper / 2`; 0 for the first bucket). */
  readonly lower: number;
  /** Sizes in the bucket are at most this, in bytes (a power of two). */
  readonly upper: number;
  /** Entries in the bucket. */
  readonly count: number;
  /** Sum of the entries' sizes, in bytes. */
  readonly bytes: number;
}

/** A power-of-two histogram: only non-empty buckets, smallest first. */
export interface SizeHistogram {
  readonly buckets: readonly HistogramBucket[];
  /** Entries in all buckets. */
  readonly count: number;
  /** Sum of all entries, in bytes. */
  readonly bytes: number;
}

/** Reads counts and byte sums (two arrays of {@link HISTOGRAM_BUCKETS}) into a histogram. */
export function readHistogram(counts: Float64Array, bytes: Float64Array): SizeHistogram {
  const buckets: HistogramBucket[] = [];
  let count = 0;
  let total = 0;
  for (let k = 0; k < HISTOGRAM_BUCKETS; k++) {
    const n = counts[k]!;
    if (n === 0) continue;
    const upper = 2 ** k;
    buckets.push({ lower: k === 0 ? 0 : upper / 2, upper, count: n, bytes: bytes[k]! });
    count += n;
    total += bytes[k]!;
  }
  return { buckets, count, bytes: total };
}

/** The histogram of a list of sizes. */
export function histogramOf(sizes: Iterable<number>): SizeHistogram {
  const counts = new Float64Array(HISTOGRAM_BUCKETS);
  const bytes = new Float64Array(HISTOGRAM_BUCKETS);
  for (const size of sizes) {
    const k = sizeBucket(size);
    counts[k]!++;
    bytes[k]! += size;
  }
  return readHistogram(counts, bytes);
}
