/**
 * Size classes of the shared heap's small objects, and how many objects move in one batch.
 *
 * Every class is a multiple of {@link UNIT_BYTES}, so an object starts on a unit boundary and its
 * unit index is its handle. A request is rounded up to the smallest class that holds it.
 */

/** Granule of small objects, in bytes: the smallest class and the heap's default alignment. */
export const UNIT_BYTES = 16;
/** Largest class of the default table, in bytes. */
const DEFAULT_LARGEST = 8 * 1024;
/** Classes per doubling above 128 B: four keep the rounding waste below 25 % of the request. */
const CLASSES_PER_DOUBLING = 4;
/**
 * A class is at most `spanSize / MIN_OBJECTS_PER_SPAN`: fewer objects per span would waste more of
 * a span's tail and make spans churn with every batch.
 */
export const MIN_OBJECTS_PER_SPAN = 8;
/**
 * Bytes a batch aims to move between a cache and the central lists (tcmalloc's
 * `num_objects_to_move` rule): larger batches take the lock less often but strand more memory in
 * caches.
 */
const BATCH_BYTES = 64 * 1024;
/** Fewest objects per batch: below this, large classes would take the lock almost every time. */
const MIN_BATCH = 8;
/** Most objects per batch: beyond this, a refill holds the lock longer for little gain. */
const MAX_BATCH = 32;

function buildDefaultSizeClasses(): number[] {
  const classes: number[] = [];
  // 16-byte steps up to 128 B: at most 15 bytes of rounding.
  for (let size = UNIT_BYTES; size <= 128; size += UNIT_BYTES) classes.push(size);
  for (let group = 128; group < DEFAULT_LARGEST; group *= 2) {
    const step = group / CLASSES_PER_DOUBLING;
    for (let i = 1; i <= CLASSES_PER_DOUBLING; i++) classes.push(group + i * step);
  }
  return classes;
}

/**
 * The default classes, in bytes: 16, 32, … 128 (16-byte steps), then four per doubling (160, 192,
 * 224, 256, 320, …, 7168, 8192): 32 classes, cut at `spanSize / 8` for small spans.
 */
export const defaultThreadCacheSizeClasses: readonly number[] = Object.freeze(
  buildDefaultSizeClasses(),
);

/** Objects a batch moves for a class of `size` bytes. */
export function batchSize(size: number): number {
  return Math.max(MIN_BATCH, Math.min(MAX_BATCH, Math.floor(BATCH_BYTES / size)));
}
