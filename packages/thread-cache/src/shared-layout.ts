/**
 * The layout of a shared heap's state buffer, and the checks on its options.
 *
 * Everything the heap knows lives in one `SharedArrayBuffer`, so every worker that attaches to it
 * sees the same heap. The buddy heap of `@allot/buddy` sits at byte 0 (its views start there), and
 * the regions of this package follow, each at a 64-byte boundary:
 *
 * ```
 *  0              buddy state: header + 12 B per page (large blocks and whole spans)
 *  header         u32 words: magic, version, poisoned, epoch, counts; f64 config (64 B × 2)
 *  lock line      one Int32 lock word alone on its 64-byte cache line
 *  figures        f64 counters, written only under the lock
 *  classes        per class: partial-span list head, central free objects, spans (8 × u32)
 *  workers        per worker slot, one 64-byte line: state, generation, published statistics
 *  span classes   u8 per span: class + 1 of a small-object span, 0 otherwise
 *  span words     per span: central free objects, next and prev in its class's partial list
 *  free bitmap    1 bit per 16-byte unit: set ⇔ an object starts there and is free centrally
 *  object states  u8 per unit: 0 free or no object, LIVE, or CACHED + worker slot
 * ```
 */

import { buddyStateBytes } from '@allot/buddy';
import { checkRange, InvalidArgumentError, isPowerOfTwo } from '@allot/core';
import { defaultThreadCacheSizeClasses, MIN_OBJECTS_PER_SPAN, UNIT_BYTES } from './size-classes';

/** Identifies an initialised shared-heap state buffer (`'TCSH'`). */
export const STATE_MAGIC = 0x54435348;
/** Bumped whenever the layout below changes; `attachHeap` refuses other versions. */
export const STATE_VERSION = 1;
/** Bytes of a cache line: hot words that different workers write sit on lines of their own. */
export const CACHE_LINE_BYTES = 64;
/** Sentinel for "no span" in the partial-span lists. */
export const NIL = 0xffffffff;

/** Object state: no live or cached object starts at this unit (it may be free centrally). */
export const OBJECT_FREE = 0;
/** Object state: a live object, held by a user. */
export const OBJECT_LIVE = 1;
/** Object state: cached by the worker in slot `s` is `OBJECT_CACHED + s`. */
export const OBJECT_CACHED = 2;
/** Most worker slots: the cached tag `OBJECT_CACHED + slot` must fit in a byte. */
export const MAX_WORKERS = 255 - OBJECT_CACHED;
/** Worker ids are `generation × WORKER_ID_STRIDE + slot`. */
export const WORKER_ID_STRIDE = 256;

/** Header words (`Int32Array` over the header line). */
export const WORD_MAGIC = 0;
export const WORD_VERSION = 1;
/** Non-zero once a worker died holding the lock: every later acquisition throws. */
export const WORD_POISONED = 2;
/** Bumped by `reset()`, so caches drop what they hold from before it. */
export const WORD_EPOCH = 3;
export const WORD_CLASS_COUNT = 4;
export const WORD_MAX_WORKERS = 5;
/** How managed memory is provided: see {@link MEMORY_KINDS}. */
export const WORD_MEMORY_KIND = 6;
/** Slot of the worker that died holding the lock, + 1 (0: none, or an anonymous holder). */
export const WORD_POISONED_BY = 7;
/** Header figures (`Float64Array` over the second header line). */
export const CONFIG_CAPACITY = 0;
export const CONFIG_BASE = 1;
export const CONFIG_SPAN_SIZE = 2;
export const CONFIG_PAGE_SIZE = 3;
export const CONFIG_MEMORY_OFFSET = 4;
export const CONFIG_MEMORY_BYTES = 5;
const HEADER_BYTES = 2 * CACHE_LINE_BYTES;

/** Memory kinds stored in {@link WORD_MEMORY_KIND}. */
export const MEMORY_KINDS = ['separate', 'same', 'none', 'external'] as const;
export type MemoryKind = (typeof MEMORY_KINDS)[number];

/** Figures (`Float64Array`), written only while holding the lock. */
export const FIGURE_HELD_BYTES = 0; // small objects out of the central lists (live or cached)
export const FIGURE_HELD_COUNT = 1;
export const FIGURE_ACTIVE_SPANS = 2;
export const FIGURE_SPAN_TAIL_BYTES = 3; // bytes at the end of active spans that fit no object
export const FIGURE_LOCK_ACQUISITIONS = 4;
export const FIGURE_CONTENDED = 5;
export const FIGURE_BATCHES_MOVED = 6;
export const FIGURE_OBJECTS_MOVED = 7;
/** Statistics of caches that flushed and left, or were reclaimed (so totals never go back). */
export const FIGURE_RETIRED_HITS = 8;
export const FIGURE_RETIRED_MISSES = 9;
export const FIGURE_RETIRED_BATCHES = 10;
export const FIGURE_RETIRED_LOCKS = 11;
export const FIGURE_RETIRED_CONTENDED = 12;
export const FIGURE_RECLAIMED_OBJECTS = 13;
export const FIGURE_RECLAIMED_BYTES = 14;
const FIGURE_COUNT = 16;

/** Per-class words (`Uint32Array`, {@link CLASS_WORDS} per class). */
export const CLASS_WORDS = 8;
export const CLASS_PARTIAL_HEAD = 0; // first span with centrally free objects, or NIL
export const CLASS_CENTRAL_FREE = 1; // objects free in the central lists
export const CLASS_SPANS = 2; // active spans of this class
export const CLASS_SIZE_WORD = 3; // the class's size in bytes (configuration, for `attachHeap`)

/** Per-worker-slot line: `Int32Array` words then `Float64Array` figures. */
export const WORKER_LINE_BYTES = CACHE_LINE_BYTES;
export const SLOT_STATE = 0; // Int32 word: SLOT_FREE or SLOT_ACTIVE
export const SLOT_GENERATION = 1; // Int32 word: bumped whenever the slot is taken
export const SLOT_FREE = 0;
export const SLOT_ACTIVE = 1;
/** f64 index (within the line) of the first published statistic. */
export const SLOT_HITS = 1;
export const SLOT_MISSES = 2;
export const SLOT_BATCHES = 3;
export const SLOT_LOCKS = 4;
export const SLOT_CONTENDED = 5;
export const SLOT_CACHED_BYTES = 6;
export const SLOT_CACHED_COUNT = 7;

/** Per-span words (`Uint32Array`, {@link SPAN_WORDS} per span). */
export const SPAN_WORDS = 3;
export const SPAN_FREE = 0; // objects of this span free in the central lists
export const SPAN_NEXT = 1;
export const SPAN_PREV = 2;

/** Options of a shared heap. */
export interface SharedHeapOptions {
  /** Bytes managed, from `base`. At least `spanSize`. */
  readonly capacity: number;
  /**
   * Address of the first byte. Blocks are aligned relative to `base`; align it to the largest
   * alignment you will ask for.
   * @defaultValue 0
   */
  readonly base?: number;
  /**
   * Bytes of a span, the buddy block that small objects of one class are cut from (a power of two,
   * 512 B – capacity). Larger spans waste less per span and strand more memory in partly used ones.
   * @defaultValue 65536 (or the largest power of two ≤ capacity, if smaller)
   */
  readonly spanSize?: number;
  /**
   * Smallest block of the buddy heap behind large requests, in bytes (a power of two, 16 B –
   * `spanSize`); requests above the largest class are rounded up to a power of two of at least this.
   * @defaultValue 4096 (or `spanSize`, if smaller)
   */
  readonly pageSize?: number;
  /**
   * Small-object classes, in bytes: ascending multiples of 16, at most `spanSize / 8`, at most 254.
   * @defaultValue {@link defaultThreadCacheSizeClasses} up to `spanSize / 8`
   */
  readonly sizeClasses?: readonly number[];
  /**
   * Most thread caches registered at once (1 – 253): each has a slot of 64 bytes.
   * @defaultValue 64
   */
  readonly maxWorkers?: number;
  /**
   * Where the managed bytes live: `'separate'`, a new `SharedArrayBuffer` of `capacity` bytes;
   * `'same'`, the state buffer, after the state; `'none'`, nowhere (the heap only places offsets,
   * for device memory or a buffer you map yourself); or a `SharedArrayBuffer` of yours, of at least
   * `memoryOffset + capacity` bytes.
   * @defaultValue 'separate'
   */
  readonly memory?: 'separate' | 'same' | 'none' | SharedArrayBuffer;
  /** Byte offset of `base` in a `memory` buffer of yours. @defaultValue 0 */
  readonly memoryOffset?: number;
}

/** The checked configuration and the byte offsets of every region. */
export interface SharedHeapConfig {
  readonly capacity: number;
  readonly base: number;
  readonly spanSize: number;
  readonly pageSize: number;
  readonly sizeClasses: readonly number[];
  readonly maxWorkers: number;
  /** Spans that fit in the range (span indices run 0 … spans − 1). */
  readonly spans: number;
  /** 16-byte units covered by spans. */
  readonly units: number;
  readonly unitsPerSpan: number;
  readonly buddyBytes: number;
  readonly headerOffset: number;
  readonly lockOffset: number;
  readonly figuresOffset: number;
  readonly classesOffset: number;
  readonly workersOffset: number;
  readonly spanClassOffset: number;
  readonly spanWordsOffset: number;
  readonly bitmapOffset: number;
  readonly objectStateOffset: number;
  /** Bytes of state (where a `'same'` memory starts, rounded up to `pageSize`). */
  readonly stateBytes: number;
}

function alignLine(bytes: number): number {
  return Math.ceil(bytes / CACHE_LINE_BYTES) * CACHE_LINE_BYTES;
}

function largestPowerOfTwoAtMost(value: number): number {
  let p = 2 ** Math.floor(Math.log2(value));
  while (p > value) p /= 2;
  while (p * 2 <= value) p *= 2;
  return p;
}

/** Default span size, in bytes: 64 KiB holds 8 objects of the largest default class. */
const DEFAULT_SPAN_SIZE = 64 * 1024;
/** Default page (buddy unit) size, in bytes: 12 bytes of buddy state per page. */
const DEFAULT_PAGE_SIZE = 4096;
/** Smallest span: 32 units, one bitmap word. */
const MIN_SPAN_SIZE = 32 * UNIT_BYTES;
/** Largest span: unit offsets inside a span stay below 2^26, exact under 32-bit arithmetic. */
const MAX_SPAN_SIZE = 2 ** 30;
const DEFAULT_MAX_WORKERS = 64;
/** Units are counted in 32-bit words of the caches' stacks. */
const MAX_UNITS = 2 ** 32 - 1;

/** Checks `options` and derives the layout. Throws `InvalidArgumentError`. */
export function resolveConfig(options: SharedHeapOptions): SharedHeapConfig {
  const { capacity, base } = checkRange(options);
  const spanSize =
    options.spanSize ?? Math.min(DEFAULT_SPAN_SIZE, largestPowerOfTwoAtMost(capacity));
  if (
    !isPowerOfTwo(spanSize) ||
    spanSize < MIN_SPAN_SIZE ||
    spanSize > capacity ||
    spanSize > MAX_SPAN_SIZE
  ) {
    throw new InvalidArgumentError(
      'spanSize',
      spanSize,
      `a power of two between ${MIN_SPAN_SIZE} and the smaller of capacity (${capacity}) and 1 GiB`,
    );
  }
  const pageSize = options.pageSize ?? Math.min(DEFAULT_PAGE_SIZE, spanSize);
  if (!isPowerOfTwo(pageSize) || pageSize < UNIT_BYTES || pageSize > spanSize) {
    throw new InvalidArgumentError(
      'pageSize',
      pageSize,
      `a power of two between ${UNIT_BYTES} and spanSize (${spanSize})`,
    );
  }
  const largestClass = spanSize / MIN_OBJECTS_PER_SPAN;
  const sizeClasses =
    options.sizeClasses ?? defaultThreadCacheSizeClasses.filter((size) => size <= largestClass);
  checkSizeClasses(sizeClasses, largestClass);
  const maxWorkers = options.maxWorkers ?? DEFAULT_MAX_WORKERS;
  if (!Number.isSafeInteger(maxWorkers) || maxWorkers < 1 || maxWorkers > MAX_WORKERS) {
    throw new InvalidArgumentError('maxWorkers', maxWorkers, `an integer from 1 to ${MAX_WORKERS}`);
  }
  const spans = Math.floor(capacity / spanSize);
  const unitsPerSpan = spanSize / UNIT_BYTES;
  const units = spans * unitsPerSpan;
  if (units > MAX_UNITS) {
    throw new InvalidArgumentError(
      'capacity',
      capacity,
      `at most ${MAX_UNITS * UNIT_BYTES} bytes (small objects are counted in 32-bit units)`,
    );
  }
  const buddyBytes = buddyStateBytes({ capacity, base, minBlockSize: pageSize });
  const headerOffset = alignLine(buddyBytes);
  const lockOffset = headerOffset + HEADER_BYTES;
  const figuresOffset = lockOffset + CACHE_LINE_BYTES;
  const classesOffset = alignLine(figuresOffset + FIGURE_COUNT * 8);
  const workersOffset = alignLine(classesOffset + sizeClasses.length * CLASS_WORDS * 4);
  const spanClassOffset = workersOffset + maxWorkers * WORKER_LINE_BYTES;
  const spanWordsOffset = alignLine(spanClassOffset + spans);
  const bitmapOffset = alignLine(spanWordsOffset + spans * SPAN_WORDS * 4);
  const objectStateOffset = alignLine(bitmapOffset + (units / 32) * 4);
  const stateBytes = alignLine(objectStateOffset + units);
  return {
    capacity,
    base,
    spanSize,
    pageSize,
    sizeClasses: Object.freeze([...sizeClasses]),
    maxWorkers,
    spans,
    units,
    unitsPerSpan,
    buddyBytes,
    headerOffset,
    lockOffset,
    figuresOffset,
    classesOffset,
    workersOffset,
    spanClassOffset,
    spanWordsOffset,
    bitmapOffset,
    objectStateOffset,
    stateBytes,
  };
}

function checkSizeClasses(classes: readonly number[], largest: number): void {
  const expectation = `ascending multiples of ${UNIT_BYTES} up to spanSize / ${MIN_OBJECTS_PER_SPAN} (${largest}), 1 to 254 of them`;
  if (!Array.isArray(classes) || classes.length < 1 || classes.length > 254) {
    throw new InvalidArgumentError('sizeClasses', classes, expectation);
  }
  let previous = 0;
  for (const size of classes) {
    if (
      !Number.isSafeInteger(size) ||
      size <= previous ||
      size % UNIT_BYTES !== 0 ||
      size > largest
    ) {
      throw new InvalidArgumentError('sizeClasses', classes, expectation);
    }
    previous = size;
  }
}

/** Byte offset at which `'same'` memory starts: the state, rounded up to `pageSize`. */
export function sameMemoryOffset(config: SharedHeapConfig): number {
  return Math.ceil(config.stateBytes / config.pageSize) * config.pageSize;
}

/**
 * Bytes of state a shared heap with these options needs: the buddy state (12 bytes per page), a
 * few cache lines, 64 bytes per worker slot, and about 1.1 bytes per 16 bytes of capacity (a bit
 * and a state byte per unit).
 *
 * @throws InvalidArgumentError when the options are invalid.
 */
export function sharedHeapStateBytes(options: Omit<SharedHeapOptions, 'memory'>): number {
  return resolveConfig(options).stateBytes;
}
