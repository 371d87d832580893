/**
 * The layout of a buddy heap's state buffer: named offsets, with no import, so that the build writes
 * each into its uses as a literal (esbuild inlines an imported primitive `const` only from a module
 * of constants alone; Node 20's V8 would otherwise load and check a module-level `const` on every
 * allocate and free). The checks on a heap's options are in `config.ts`.
 *
 * Everything a buddy heap knows lives in one `ArrayBuffer` or `SharedArrayBuffer`, so a second
 * view attached to the same buffer (in this thread or, under a lock the caller holds, in another
 * worker) sees the same heap:
 *
 * ```
 *  byte 0                                    HEADER_BYTES                HEADER_BYTES + 12 × units
 *  ┌─────────────┬───────────────┬────────────┬─────────────────────────────────────────────┐
 *  │ words (u32) │ figures (f64) │ free lists │ cells: 3 × u32 per unit                     │
 *  │ magic, ver, │ base, capac., │ head and   │ [tag, next, prev]   at the head of a free   │
 *  │ lock, mask, │ allocated,    │ count per  │ [tag, requested lo, requested hi]  … live   │
 *  │ orders,units│ requested, …  │ order      │ [0, -, -]           inside a block          │
 *  └─────────────┴───────────────┴────────────┴─────────────────────────────────────────────┘
 * ```
 *
 * A unit is `minBlockSize` bytes; block indices count units from `base`. A tag holds the block's
 * order and a FREE or LIVE bit. Keeping a unit's tag and links in one 12-byte cell means a buddy
 * check and the list update that follows touch one cache line. State costs 12 bytes per unit plus
 * the header, so pick `minBlockSize` to keep `capacity / minBlockSize` reasonable (it must stay
 * below 2^32 − 1, the free-list sentinel).
 */

/** Identifies an initialised buddy state buffer (`'BDDY'`). */
export const STATE_MAGIC = 0x42444459;
/** Bumped whenever the layout or its meaning changes; `attach` refuses other versions. */
export const STATE_VERSION = 3;

/** Most orders a heap can have: block indices are below 2^32, so orders run 0..31. */
export const MAX_ORDERS = 32;
/** Sentinel for "no block" in the free lists (block indices must stay below it). */
export const NIL = 0xffffffff;

/** Indices into the `Uint32Array` over the header. */
export const WORD_MAGIC = 0;
export const WORD_VERSION = 1;
/** Reserved for the owner of a shared heap (an `Int32Array` lock word); this package never touches it. */
export const WORD_LOCK = 2;
/** Bit k set ⇔ the free list of order k is non-empty. */
export const WORD_NON_EMPTY = 3;
/** log2(minBlockSize). */
export const WORD_MIN_ORDER = 4;
/** Order of the largest block, in units (maxBlockSize = minBlockSize × 2^maxOrder). */
export const WORD_MAX_ORDER = 5;
/** Number of units covered (capacity / minBlockSize, rounded down). */
export const WORD_UNITS = 6;
/**
 * The deferred block: 1 + the unit index of the one freed block whose merge is put off (see
 * `buddy.ts`), or 0 when there is none. It is on no free list (since state version 3): its tag
 * says it is free, the next allocation of its order takes it back as it is, and any other call
 * first merges it and files the result.
 */
export const WORD_DEFERRED = 7;
/** Number of 32-bit words before the figures (bytes 0..31). */
const WORD_COUNT = 8;

/** Indices into the `Float64Array` over the header (figures in bytes unless said otherwise). */
const FIGURE_FIRST = WORD_COUNT / 2;
export const FIGURE_BASE = FIGURE_FIRST;
export const FIGURE_CAPACITY = FIGURE_FIRST + 1;
/** Sum of usable (rounded) sizes of live blocks. */
export const FIGURE_ALLOCATED = FIGURE_FIRST + 2;
/** Sum of requested sizes of live blocks. */
export const FIGURE_REQUESTED = FIGURE_FIRST + 3;
/** Number of live blocks. (Free bytes are the rest of the units; free blocks, the list counts.) */
export const FIGURE_LIVE_COUNT = FIGURE_FIRST + 4;
/**
 * Changes to the free lists other than the deferred block's own come and go: a view may reuse what
 * it worked out about the deferred block while this is unchanged.
 */
export const FIGURE_VERSION = FIGURE_FIRST + 5;
/** One past the last f64 slot of the header (one spare slot). */
const FIGURE_END = FIGURE_FIRST + 7;

/** Byte offset of the free-list heads (`Uint32Array`, one per order). */
export const HEADS_OFFSET = FIGURE_END * 8;
/** Byte offset of the per-order free-block counts (`Uint32Array`, one per order). */
export const COUNTS_OFFSET = HEADS_OFFSET + MAX_ORDERS * 4;
/** Bytes of header before the per-unit cells. */
export const HEADER_BYTES = COUNTS_OFFSET + MAX_ORDERS * 4;
/** Byte offset of the per-unit cells (`Uint32Array`, {@link CELL_WORDS} words per unit). */
export const CELLS_OFFSET = HEADER_BYTES;
/** Words per unit: tag, then next and prev (free block) or requested size low and high (live block). */
export const CELL_WORDS = 3;
/** Cell word: the tag. */
export const CELL_TAG = 0;
/** Cell word: next free block of the same order, or the low 32 bits of the requested size. */
export const CELL_NEXT = 1;
/** Cell word: previous free block of the same order, or the requested size divided by 2^32. */
export const CELL_PREV = 2;

/** Tag bit: the unit starts a free block. */
export const TAG_FREE = 0x40;
/** Tag bit: the unit starts a live block. */
export const TAG_LIVE = 0x80;
/** Tag bits holding the block's order. */
export const TAG_ORDER_MASK = 0x3f;
/** 2^32: a requested size is kept in two 32-bit words, `high × 2^32 + low`. */
export const TWO_POW_32 = 4294967296;
