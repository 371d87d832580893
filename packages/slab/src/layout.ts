/**
 * Layouts of the slab allocator's typed arrays: named offsets, one module of their own so that the
 * build inlines them (an imported primitive `const` becomes a literal; Node 20 would otherwise load
 * and check a module-level `const` on every use in the hot paths).
 */

// Per-class integers (`classInts`, stride CLASS_INTS).
export const CLASS_OBJECTS = 0;
/** Head and tail of the list of slabs with a free object (partial ones first, then empty ones). */
export const CLASS_HEAD = 1;
export const CLASS_TAIL = 2;
export const CLASS_SLABS = 3;
export const CLASS_FULL = 4;
/** Empty slabs on the list other than its head (whose emptiness takes and frees change freely). */
export const CLASS_EMPTY = 5;
export const CLASS_INTS = 8;
// Per-class figures (`classFigures`, stride CLASS_FIGURES), in bytes.
export const CLASS_SIZE = 0;
export const CLASS_ALIGNMENT = 1;
export const CLASS_SLAB_BYTES = 2;
/** Alignment asked of the upstream for a slab of the class. */
export const CLASS_SLAB_ALIGNMENT = 3;
export const CLASS_HELD = 4;
export const CLASS_FIGURES = 8;

// A slab record: one Float64Array, a header of RECORD_HEADER words, then one word per object
// (the requested size while live; while free, the next free object n encoded as −(n + 1)).
/** Address of the slab's first byte. */
export const RECORD_BASE = 0;
/** Object size, and its inverse (for the division on free). */
export const RECORD_SIZE = 1;
export const RECORD_INVERSE = 2;
/** First object of the free list, −1 when empty. */
export const RECORD_FREE_HEAD = 3;
/** Free objects. */
export const RECORD_FREE = 4;
export const RECORD_OBJECTS = 5;
/** Objects from here on were never handed out. */
export const RECORD_BUMP = 6;
export const RECORD_CLASS = 7;
export const RECORD_ID = 8;
/** Neighbours (slab ids, −1 for none) on the class's list. */
export const RECORD_NEXT = 9;
export const RECORD_PREV = 10;
/** Usable bytes the upstream gave for the slab. */
export const RECORD_HELD = 11;
/** Bytes of slab covered by the page map (the class's slab size). */
export const RECORD_SPAN = 12;
/** 1 while the slab is held. */
export const RECORD_IN_USE = 13;
/** Address the upstream returned (the slab's base, unless the slab had to be aligned inside it). */
export const RECORD_UPSTREAM = 14;
export const RECORD_HEADER = 16;
