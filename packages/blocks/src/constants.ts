/**
 * The numbers the hot paths read, as literals in a module of their own. The build (esbuild with
 * `minifySyntax`) writes an imported primitive `const` into every use as a literal; a `const` used
 * in the module that declares it becomes a `var`, which Node 20's V8 loads from the module's
 * context and checks on every allocate and free. Powers of two are written out: `2 ** 31` would stay
 * an expression, and so a load.
 */

/** "No block": the end of a link or an empty lookup. */
export const NIL = -1;

/** An empty bucket of an `AddressMap` (keys are never negative). */
export const EMPTY = -1;

/** `BlockState` values, for the hot paths (an object's property is a load, not a literal). */
export const UNUSED = 0;
export const FREE = 1;
export const LIVE = 2;

/** 2^31: the smallest count or key that no longer fits an int32. */
export const TWO_POW_31 = 2147483648;
/** 2^32. */
export const TWO_POW_32 = 4294967296;

/** log2 of the number of second-level classes per first level: 5 → 32 classes, ≤ 3.1% waste. */
export const SECOND_LEVEL_LOG2 = 5;
/** Second-level classes per first level (2^{@link SECOND_LEVEL_LOG2}). */
export const SECOND_LEVEL_COUNT = 32;
/** Rows of segregated classes: row 0 holds sizes below 32 one by one, row r ≥ 1 [2^(r+4), 2^(r+5)). */
export const ROWS = 49;
/** Number of segregated classes ({@link ROWS} × {@link SECOND_LEVEL_COUNT}). */
export const CLASS_COUNT = 1568;

/** Int32 words per id of a `SegregatedLists` (next, previous, class, and one spare for alignment). */
export const LIST_WORDS = 4;
/** Offsets of an id's next id, previous id and class among its {@link LIST_WORDS}. */
export const LIST_NEXT = 0;
export const LIST_PREV = 1;
export const LIST_CLASS = 2;

/** Recently freed addresses a fit allocator remembers to tell a double free after coalescing; a power of two. */
export const RECENT_FREES = 64;

/**
 * 2^-32: multiplying by it is exact, and cheaper than dividing by 2^32. Last in this module: the
 * build inlines no fraction, nor any constant declared after one.
 */
export const TWO_POW_MINUS_32 = 2.3283064365386963e-10;
