/**
 * Block-index arithmetic for the buddy system. Indices count units of `minBlockSize`.
 * `isUpperHalf` and `buddyIndex` take any safe integer (well beyond 2^31) by float arithmetic on
 * exact values: dividing by a power of two and flooring is exact. A heap's own indices are below
 * 2^32 (its configuration refuses more units), so its hot paths use `buddyOf`, one unsigned shift.
 */

/** 2^k for k = 0..64. */
export const POW = new Float64Array(65).map((_, k) => 2 ** k);
/** 2^−k for k = 0..64. */
export const INV_POW = new Float64Array(65).map((_, k) => 2 ** -k);

/**
 * Whether the block of order `order` at unit `index` is the upper half of its parent, that is
 * `index mod 2^(order+1) ≥ 2^order`. `index` must be a multiple of 2^order.
 */
export function isUpperHalf(index: number, order: number): boolean {
  const twice = POW[order + 1]!;
  return index - Math.floor(index * INV_POW[order + 1]!) * twice >= POW[order]!;
}

/** Unit index of the buddy of the block of order `order` at unit `index` (flip bit `order`). */
export function buddyIndex(index: number, order: number): number {
  return isUpperHalf(index, order) ? index - POW[order]! : index + POW[order]!;
}

/**
 * `buddyIndex` for an index below 2^32, as every index of a heap is: bit `order` of `index` (read
 * unsigned) says which half of its parent the block is. The buddy is below `index` exactly when
 * the block is the upper half.
 */
export function buddyOf(index: number, order: number): number {
  return ((index >>> order) & 1) === 1 ? index - POW[order]! : index + POW[order]!;
}
