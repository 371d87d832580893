/**
 * The sizes of PyTorch's CUDA caching allocator, by name. Each is one trade-off: larger segments
 * mean fewer (slow) source calls but more memory held that a request of another size cannot use.
 */

/** Every block size is a multiple of this, in bytes; also the pool's minimum alignment. */
export const MIN_BLOCK_SIZE = 512;
/** Largest request, after rounding, served by the small pool (1 MiB). */
export const SMALL_SIZE = 1024 * 1024;
/** Segment size of the small pool (2 MiB): packs many small blocks per source call. */
export const SMALL_BUFFER = 2 * 1024 * 1024;
/** Segment size for large requests under {@link MIN_LARGE_ALLOC} (20 MiB). */
export const LARGE_BUFFER = 20 * 1024 * 1024;
/** From this size on (10 MiB) a request gets a segment of its own, rounded to {@link ROUND_LARGE}. */
export const MIN_LARGE_ALLOC = 10 * 1024 * 1024;
/** Rounding of segments for requests of {@link MIN_LARGE_ALLOC} and more (2 MiB). */
export const ROUND_LARGE = 2 * 1024 * 1024;
/** Bytes per MiB: the unit of the `_mb` knobs. */
export const MIB = 1024 * 1024;
/** Number of power-of-two intervals of `roundup_power2_divisions`: [1 MiB, 2 MiB) … [32 GiB, ∞). */
export const ROUNDUP_INTERVALS = 16;
/** log2 of the first interval boundary (1 MiB). */
export const ROUNDUP_FIRST_LOG2 = 20;
/**
 * Largest rounded block size the pool will try to serve: its segment, padded for any alignment and
 * rounded to {@link ROUND_LARGE}, must still be a safe integer. A larger request gets `null`.
 */
export const MAX_ROUNDED_SIZE = Number.MAX_SAFE_INTEGER - 2 ** 33;
