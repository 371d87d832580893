/**
 * buddy: the binary buddy system over a range of addresses, with every bit of state in typed
 * arrays over one (Shared)ArrayBuffer.
 *
 * Design
 * - The range is cut into units of `minBlockSize` bytes; a block of order k is 2^k units long
 *   and starts at a unit index that is a multiple of 2^k, so it is aligned to its own size
 *   relative to `base`. Indices are counted in units, never as byte addresses.
 * - The range is first covered by maximal blocks: as many blocks of `maxBlockSize` as fit, then
 *   the binary digits of what is left, largest first, down to `minBlockSize` (only a tail shorter
 *   than `minBlockSize` is unused). Blocks never merge across maximal blocks.
 * - Each unit has a 12-byte cell (see `state-layout.ts`): a tag (order, FREE or LIVE bit) at a
 *   block's first unit, 0 inside a block. Per order, free blocks sit on an intrusive doubly-linked
 *   list through their cells; a 32-bit mask says which lists are non-empty, so finding the smallest
 *   sufficient order is one count-leading-zeros. A live block keeps its requested size in the same
 *   two words, for internal-fragmentation figures.
 * - Allocation takes the head of the smallest non-empty sufficient list and splits it, pushing the
 *   upper halves. Free merges with the buddy while the buddy is a free block of the same order; the
 *   buddy index is `i + n` or `i − n` by arithmetic on the index (exact for any index < 2^53, no
 *   32-bit XOR). Both are O(log(maxBlockSize / minBlockSize)) and allocate nothing. A free whose
 *   buddy is not free (most frees, on a busy heap) files the block at once: one tag read decides,
 *   and the deferral check and the merge walk below are not entered.
 * - Deferred merging, for the alloc/free ping-pong of one size: freeing a block whose buddy is free
 *   would merge it up through every level, and the next allocation of that size would split the
 *   same levels again (O(orders) each way). Instead, the freed block may stay unmerged, on no list
 *   and tagged free, as the *deferred block* (at most one, in the header's `WORD_DEFERRED`), when the
 *   next allocation of its order could take it without breaking the buddy rule: every order from
 *   its own up to where it would have merged holds only the buddies it would have merged with, so
 *   the block it would have become is the smallest sufficient one. An allocation of its order
 *   takes it in O(1); any other call settles it first (merges it as usual), and so do `usage`,
 *   `stats`, `layout` and `reset`, so the heap always shows, and behaves as, the fully merged
 *   heap. The check walks the levels once; a view remembers its answer until the free lists change
 *   (`FIGURE_VERSION`), so a steady ping-pong is O(1) both ways, and touches no list: a pair is a
 *   tag and a header word each way.
 * - A request is rounded up to a power of two of at least its alignment: an aligned block of that
 *   order satisfies both. Alignment is relative to `base`, so a request whose alignment exceeds
 *   the largest power of two dividing `base` returns `null`.
 *
 * This module does no locking: views over a shared buffer in several workers must be serialised
 * by their owner (the header keeps a lock word, {@link WORD_LOCK}, for that purpose).
 */
import {
  type Allocator,
  checkRequest,
  InvalidArgumentError,
  type Layout,
  type LayoutBlock,
  type LayoutSegment,
  type Usage,
} from '@allot/core';
import { buddyOf, POW } from './block-index';
import { BuddyLists } from './buddy-lists';
import { type BuddyOptions, resolveConfig } from './config';
import {
  CELL_NEXT,
  CELL_PREV,
  CELL_TAG,
  CELL_WORDS,
  FIGURE_ALLOCATED,
  FIGURE_BASE,
  FIGURE_CAPACITY,
  FIGURE_LIVE_COUNT,
  FIGURE_REQUESTED,
  FIGURE_VERSION,
  HEADER_BYTES,
  HEADS_OFFSET,
  NIL,
  STATE_MAGIC,
  STATE_VERSION,
  TAG_FREE,
  TAG_LIVE,
  TAG_ORDER_MASK,
  TWO_POW_32,
  WORD_DEFERRED,
  WORD_MAGIC,
  WORD_MAX_ORDER,
  WORD_MIN_ORDER,
  WORD_NON_EMPTY,
  WORD_UNITS,
  WORD_VERSION,
} from './state-layout';

/** Buddy figures beyond {@link Usage}. */
export interface BuddyStats extends Usage {
  /** Sum of the sizes callers asked for, over live blocks, in bytes. */
  readonly requestedBytes: number;
  /** Internal fragmentation: rounded minus requested bytes over live blocks (`allocatedBytes − requestedBytes`). */
  readonly internalFragmentationBytes: number;
  /** Number of free blocks per order; index k counts blocks of `minBlockSize × 2^k` bytes. */
  readonly freeBlocksByOrder: readonly number[];
}

/** A binary buddy heap. */
export interface Buddy extends Allocator {
  /** Address of the first byte managed. */
  readonly base: number;
  /** Bytes managed (as given; a tail shorter than `minBlockSize` is overhead). */
  readonly capacity: number;
  /** Smallest block, in bytes. */
  readonly minBlockSize: number;
  /** Largest block, in bytes. */
  readonly maxBlockSize: number;
  /** The buffer holding all state; attach another view to it with `buddy.attach`. */
  readonly state: ArrayBuffer | SharedArrayBuffer;
  /** Usage plus requested bytes, internal fragmentation and free blocks per order. O(orders). */
  stats(): BuddyStats;
  /** One segment per maximal block, its blocks in address order (live ones with `requestedSize`). */
  layout(): Layout;
}

const INV_TWO_POW_32 = 2 ** -32;

class BuddyHeap extends BuddyLists implements Buddy {
  allocate(size: number, alignment?: number): number | null {
    // The common call (an integer size within the heap's blocks, the default alignment) goes
    // straight to its order; anything else, checked or refused, out of line.
    if (
      alignment !== undefined ||
      !(size > 0 && size <= this.maxBlockSize && Number.isInteger(size))
    ) {
      return this.allocateChecked(size, alignment);
    }
    return this.takeOrder(this.orderOf(size), size);
  }

  /** {@link allocate} with an alignment, or a size to check: throws, refuses, or takes a block. */
  private allocateChecked(size: number, alignment: number | undefined): number | null {
    const align = checkRequest(size, alignment, this.alignment);
    if (align > this.baseAlignment) return null;
    const need = Math.max(size, align);
    if (need > this.maxBlockSize) return null;
    return this.takeOrder(this.orderOf(need), size);
  }

  /** The order of the smallest block that holds `need` bytes (`need` ≤ the largest block). */
  private orderOf(need: number): number {
    // Units needed ≤ 2^31 (maxOrder ≤ 31), so clz32 is exact on this count.
    return need > this.minBlockSize ? 32 - Math.clz32(Math.ceil(need * this.inverseUnit) - 1) : 0;
  }

  /** A live block of `order` for `size` bytes: the deferred block when it has that order, else {@link take}'s. */
  private takeOrder(order: number, size: number): number | null {
    const deferred = this.words[WORD_DEFERRED]!;
    if (
      deferred !== 0 &&
      (this.cells[(deferred - 1) * CELL_WORDS + CELL_TAG]! & TAG_ORDER_MASK) === order
    ) {
      // The deferred block is the smallest sufficient one (checked when it was deferred).
      this.words[WORD_DEFERRED] = 0;
      return this.markLive(deferred - 1, order, size);
    }
    return this.take(order, size);
  }

  /**
   * A block of `order` for `size` bytes from the free lists, split from a larger one when needed
   * (the deferred block, if any, merged first); null when none is left.
   */
  private take(order: number, size: number): number | null {
    this.settle();
    this.figures[FIGURE_VERSION]!++;
    const words = this.words;
    const mask = words[WORD_NON_EMPTY]!;
    const available = mask >>> order;
    if (available === 0) return null;
    let k = order + 31 - Math.clz32(available & -available);
    const index = this.pop(k);
    const cells = this.cells;
    if (k > order) {
      // Split: the upper halves become the only blocks of orders order..k−1 (those lists were
      // empty, or k would be smaller).
      const heads = this.heads;
      const counts = this.counts;
      while (k > order) {
        k--;
        const upper = index + POW[k]!;
        const cell = upper * CELL_WORDS;
        cells[cell + CELL_TAG] = TAG_FREE | k;
        cells[cell + CELL_NEXT] = NIL;
        cells[cell + CELL_PREV] = NIL;
        heads[k] = upper;
        counts[k] = 1;
      }
      // Set the bits of orders order..k₀−1 (pop already updated bit k₀).
      this.words[WORD_NON_EMPTY]! |=
        ((1 << (31 - Math.clz32(available & -available))) - 1) << order;
    }
    return this.markLive(index, order, size);
  }

  /** Tags block `index` of `order` live with `size` requested, counts it; returns its address. */
  private markLive(index: number, order: number, size: number): number {
    const cells = this.cells;
    const cell = index * CELL_WORDS;
    cells[cell + CELL_TAG] = TAG_LIVE | order;
    if (size < TWO_POW_32) {
      cells[cell + CELL_NEXT] = size;
      cells[cell + CELL_PREV] = 0;
    } else {
      const high = Math.floor(size * INV_TWO_POW_32);
      cells[cell + CELL_NEXT] = size - high * TWO_POW_32;
      cells[cell + CELL_PREV] = high;
    }
    const figures = this.figures;
    figures[FIGURE_ALLOCATED]! += this.blockBytes[order]!;
    figures[FIGURE_REQUESTED]! += size;
    figures[FIGURE_LIVE_COUNT]!++;
    return this.base + index * this.minBlockSize;
  }

  free(address: number): void {
    const index = this.indexOf(address);
    const cells = this.cells;
    if (index < 0 || cells[index * CELL_WORDS + CELL_TAG]! < TAG_LIVE) {
      throw this.invalidFree(address);
    }
    const cell = index * CELL_WORDS;
    const k = cells[cell + CELL_TAG]! & TAG_ORDER_MASK;
    // Read the requested size before the links reuse its words.
    const requested = cells[cell + CELL_PREV]! * TWO_POW_32 + cells[cell + CELL_NEXT]!;
    const figures = this.figures;
    figures[FIGURE_ALLOCATED]! -= this.blockBytes[k]!;
    figures[FIGURE_REQUESTED]! -= requested;
    figures[FIGURE_LIVE_COUNT]!--;
    const words = this.words;
    if (words[WORD_DEFERRED] !== 0) this.settle();
    // What this view worked out about deferring this block holds while the lists are unchanged.
    const known = index === this.deferIndex && figures[FIGURE_VERSION] === this.deferVersion;
    if (known) {
      if (this.deferAllowed) {
        this.defer(index, k);
        return;
      }
    } else if (!this.buddyIsFree(index, k)) {
      // The common case on a busy heap: nothing to merge, so nothing to defer either.
      figures[FIGURE_VERSION]!++;
      this.push(index, k);
      cells[cell + CELL_TAG] = TAG_FREE | k;
      return;
    } else if (this.mayDefer(index, k)) {
      this.defer(index, k);
      return;
    }
    figures[FIGURE_VERSION]!++;
    this.release(index, k);
  }

  /**
   * Makes freed block `index` of order `k` the deferred block: off the lists, free (its tag says so)
   * and taken back by the next allocation of its order.
   */
  private defer(index: number, k: number): void {
    this.cells[index * CELL_WORDS + CELL_TAG] = TAG_FREE | k;
    this.words[WORD_DEFERRED] = index + 1;
  }

  /** Whether the buddy of block `index` of order `k` is a free block of order `k` (then they merge). */
  private buddyIsFree(index: number, k: number): boolean {
    if (k >= this.maxOrder) return false;
    const buddy = buddyOf(index, k);
    return buddy < this.units && this.cells[buddy * CELL_WORDS + CELL_TAG] === (TAG_FREE | k);
  }

  /**
   * Whether block `index` of order `k`, just freed, may stay unmerged as the deferred block: its
   * buddy is free (else there is nothing to put off), and every order it would merge through holds
   * only the buddy it would merge with, so the next allocation of order `k` may take it and still
   * come from the smallest sufficient block. Remembered per view until the lists change.
   */
  private mayDefer(index: number, k: number): boolean {
    const version = this.figures[FIGURE_VERSION]!;
    const cells = this.cells;
    const counts = this.counts;
    const units = this.units;
    const maxOrder = this.maxOrder;
    let allowed = false;
    let at = index;
    for (let j = k; j < maxOrder; j++) {
      const buddy = buddyOf(at, j);
      if (buddy >= units || cells[buddy * CELL_WORDS + CELL_TAG] !== (TAG_FREE | j)) break;
      if (counts[j] !== 1) {
        allowed = false;
        break;
      }
      allowed = true;
      if (buddy < at) at = buddy;
    }
    this.deferIndex = index;
    this.deferVersion = version;
    this.deferAllowed = allowed;
    return allowed;
  }

  /** Merges the deferred block, if any, as its free would have. */
  private settle(): void {
    const words = this.words;
    const deferred = words[WORD_DEFERRED]!;
    if (deferred === 0) return;
    words[WORD_DEFERRED] = 0;
    const index = deferred - 1;
    const k = this.cells[index * CELL_WORDS + CELL_TAG]! & TAG_ORDER_MASK;
    this.figures[FIGURE_VERSION]!++;
    this.release(index, k);
  }

  /** Puts free block `index` of order `k` (on no list) back, merged with its free buddies. */
  private release(index: number, order: number): void {
    const cells = this.cells;
    let k = order;
    let at = index;
    const maxOrder = this.maxOrder;
    const units = this.units;
    while (k < maxOrder) {
      const buddy = buddyOf(at, k);
      if (buddy >= units || cells[buddy * CELL_WORDS + CELL_TAG] !== (TAG_FREE | k)) break;
      this.remove(buddy, k);
      if (buddy < at) {
        cells[at * CELL_WORDS + CELL_TAG] = 0;
        at = buddy;
      } else {
        cells[buddy * CELL_WORDS + CELL_TAG] = 0;
      }
      k++;
    }
    this.push(at, k);
    cells[at * CELL_WORDS + CELL_TAG] = TAG_FREE | k;
  }

  usableSize(address: number): number {
    const tag = this.liveTag(address);
    if (tag < 0) {
      throw new InvalidArgumentError('address', address, 'the start of a live block of this heap');
    }
    return POW[tag & TAG_ORDER_MASK]! * this.minBlockSize;
  }

  owns(address: number): boolean {
    return this.liveTag(address) >= 0;
  }

  usage(): Usage {
    this.settle();
    const f = this.figures;
    const allocatedBytes = f[FIGURE_ALLOCATED]!;
    const freeBytes = this.units * this.minBlockSize - allocatedBytes;
    const mask = this.words[WORD_NON_EMPTY]!;
    let freeBlockCount = 0;
    for (let k = 0; k <= this.maxOrder; k++) freeBlockCount += this.counts[k]!;
    return {
      capacity: this.capacity,
      allocatedBytes,
      freeBytes,
      overheadBytes: this.capacity - allocatedBytes - freeBytes,
      largestFreeBlock: mask === 0 ? 0 : POW[31 - Math.clz32(mask)]! * this.minBlockSize,
      liveCount: f[FIGURE_LIVE_COUNT]!,
      freeBlockCount,
    };
  }

  stats(): BuddyStats {
    const usage = this.usage();
    const requestedBytes = this.figures[FIGURE_REQUESTED]!;
    return {
      ...usage,
      requestedBytes,
      internalFragmentationBytes: usage.allocatedBytes - requestedBytes,
      freeBlocksByOrder: Array.from(this.counts.subarray(0, this.maxOrder + 1)),
    };
  }

  layout(): Layout {
    this.settle();
    const segments: LayoutSegment[] = [];
    const unit = this.minBlockSize;
    const cells = this.cells;
    for (let r = 0; r < this.rootStarts.length; r++) {
      const start = this.rootStarts[r]!;
      const end = start + POW[this.rootOrders[r]!]!;
      const blocks: LayoutBlock[] = [];
      for (let at = start; at < end; ) {
        const cell = at * CELL_WORDS;
        const tag = cells[cell + CELL_TAG]!;
        const length = POW[tag & TAG_ORDER_MASK]!;
        const address = this.base + at * unit;
        const size = length * unit;
        if (tag >= TAG_LIVE) {
          const requestedSize = cells[cell + CELL_PREV]! * TWO_POW_32 + cells[cell + CELL_NEXT]!;
          blocks.push({ address, size, free: false, requestedSize });
        } else {
          blocks.push({ address, size, free: true });
        }
        at += length;
      }
      segments.push({ address: this.base + start * unit, size: (end - start) * unit, blocks });
    }
    return { segments };
  }

  reset(): void {
    this.clear(false);
  }
}

/** The `buddy` factory, with `attach` for opening an existing state buffer. */
export interface BuddyFactory {
  /**
   * Makes a buddy heap over `[base, base + capacity)`. With `options.state`, the state lives in that
   * buffer (which is initialised); otherwise in a new `ArrayBuffer`.
   *
   * @throws InvalidArgumentError when an option is invalid or `state` is too small.
   */
  (options: BuddyOptions): Buddy;
  /**
   * Opens a second view over a heap that lives in `state` (for example a `SharedArrayBuffer`
   * received from another worker). Both views see and change the same heap; the caller serialises
   * access across threads. When `options` are given they must match the heap's.
   *
   * @throws InvalidArgumentError when `state` holds no buddy heap or the options differ.
   */
  attach(state: ArrayBuffer | SharedArrayBuffer, options?: Omit<BuddyOptions, 'state'>): Buddy;
}

function createBuddy(options: BuddyOptions): Buddy {
  const config = resolveConfig(options);
  let state = options.state;
  const zeroed = state === undefined;
  if (state === undefined) {
    state = new ArrayBuffer(config.stateBytes);
  } else if (!isBuffer(state) || state.byteLength < config.stateBytes) {
    throw new InvalidArgumentError(
      'state',
      isBuffer(state) ? `a buffer of ${state.byteLength} bytes` : state,
      `an ArrayBuffer or SharedArrayBuffer of at least ${config.stateBytes} bytes (buddyStateBytes)`,
    );
  }
  const heap = new BuddyHeap(config, state);
  heap.initialise(config, zeroed);
  return heap;
}

function attachBuddy(
  state: ArrayBuffer | SharedArrayBuffer,
  options?: Omit<BuddyOptions, 'state'>,
): Buddy {
  if (!isBuffer(state) || state.byteLength < HEADER_BYTES) {
    throw new InvalidArgumentError('state', state, 'a buffer that holds a buddy heap');
  }
  const words = new Uint32Array(state, 0, HEADS_OFFSET / 4);
  const figures = new Float64Array(state, 0, HEADS_OFFSET / 8);
  if (words[WORD_MAGIC] !== STATE_MAGIC || words[WORD_VERSION] !== STATE_VERSION) {
    throw new InvalidArgumentError(
      'state',
      `a buffer with magic 0x${words[WORD_MAGIC]!.toString(16)}, version ${words[WORD_VERSION]}`,
      `a buddy heap of state version ${STATE_VERSION}`,
    );
  }
  const stored = resolveConfig({
    capacity: figures[FIGURE_CAPACITY]!,
    base: figures[FIGURE_BASE]!,
    minBlockSize: 2 ** words[WORD_MIN_ORDER]!,
    maxBlockSize: 2 ** (words[WORD_MIN_ORDER]! + words[WORD_MAX_ORDER]!),
  });
  if (stored.units !== words[WORD_UNITS] || state.byteLength < stored.stateBytes) {
    throw new InvalidArgumentError('state', state, 'an intact buddy heap');
  }
  if (options !== undefined) {
    const asked = resolveConfig(options);
    for (const key of ['capacity', 'base', 'minBlockSize', 'maxBlockSize'] as const) {
      if (asked[key] !== stored[key]) {
        throw new InvalidArgumentError(key, asked[key], `${stored[key]}, as in the attached heap`);
      }
    }
  }
  return new BuddyHeap(stored, state);
}

function isBuffer(value: unknown): value is ArrayBuffer | SharedArrayBuffer {
  return (
    value instanceof ArrayBuffer ||
    (typeof SharedArrayBuffer !== 'undefined' && value instanceof SharedArrayBuffer)
  );
}

/**
 * Makes a binary buddy heap; `buddy.attach(state)` opens another view over an existing one.
 *
 * @example
 * ```ts
 * const heap = buddy({ capacity: 1 << 30, base: 2 ** 40, minBlockSize: 256 });
 * const address = heap.allocate(3000); // a 4 KiB block, aligned to 4 KiB
 * heap.free(address!);
 * ```
 */
export const buddy: BuddyFactory = Object.assign(createBuddy, { attach: attachBuddy });
