/**
 * Size-class tables for `slab`. A request is rounded up to the smallest class that holds it, so
 * the spacing of the classes bounds the rounding waste.
 */

/** Largest class of {@link defaultSizeClasses}, in bytes. */
const DEFAULT_LARGEST = 64 * 1024;
/** Classes per doubling above 64 B: four bounds rounding waste below 25 % of the request. */
const CLASSES_PER_DOUBLING = 4;

function buildDefaultSizeClasses(): number[] {
  const classes: number[] = [];
  // 8-byte steps up to 64 B: at most 7 bytes of rounding.
  for (let size = 8; size <= 64; size += 8) classes.push(size);
  // Then four classes per doubling (80, 96, 112, 128, 160, ...): waste < 25 % of the request.
  for (let group = 64; group < DEFAULT_LARGEST; group *= 2) {
    const step = group / CLASSES_PER_DOUBLING;
    for (let i = 1; i <= CLASSES_PER_DOUBLING; i++) classes.push(group + i * step);
  }
  return classes;
}

/**
 * The default classes, in bytes: 8, 16, 24, … 64 (8-byte steps), then four per doubling
 * (80, 96, 112, 128, 160, 192, 224, 256, …, 57344, 65536). Rounding wastes at most 7 bytes up to
 * 64 B and less than 25 % of the request above; 48 classes in all.
 */
export const defaultSizeClasses: readonly number[] = Object.freeze(buildDefaultSizeClasses());

/**
 * Classes that mirror the bucket sizes of transformer workloads, in bytes: 64 B, 256 B, 1 KiB,
 * 4 KiB, 16 KiB, 64 KiB, 256 KiB, 1 MiB. Coarse (rounding may waste up to 75 %), for activations
 * and caches that come in these sizes.
 */
export const transformerSizeClasses: readonly number[] = Object.freeze([
  64,
  256,
  1024,
  4 * 1024,
  16 * 1024,
  64 * 1024,
  256 * 1024,
  1024 * 1024,
]);
