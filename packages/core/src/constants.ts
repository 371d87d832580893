/**
 * Numbers that several packages need to split a 53-bit address or size into two 32-bit words
 * without a bitwise operator touching the whole value: `high = Math.floor(x * INV_TWO_POW_32)`,
 * `low = x - high * TWO_POW_32`, and back, `high * TWO_POW_32 + low`. Both products are exact.
 *
 * A loop that runs on every allocation may spell the literal instead: a package's build inlines
 * its own module-level constants, but not one imported from another package, and Node 20 loads
 * and checks an imported binding on each use.
 */

/** 2^32: one more than the largest 32-bit unsigned integer. */
export const TWO_POW_32 = 4294967296;

/** 2^-32: multiplying by it is exact, and cheaper than dividing by {@link TWO_POW_32}. */
export const INV_TWO_POW_32 = 2.3283064365386963e-10;
