/**
 * threadCache: a per-worker cache of free small objects in front of a shared heap.
 *
 * Design (tcmalloc's thread cache)
 * - Per size class, a private stack of free objects (unit indices in a private `Uint32Array`). A
 *   hit pops or pushes one entry and writes the object's state byte in shared memory with a plain
 *   store: no lock and no atomic (see the memory-ordering argument in `shared-heap.ts`: the
 *   object belongs to this thread at that moment).
 * - A miss moves a whole batch under one lock acquisition: an empty stack is refilled with
 *   `batch(class)` objects; a stack that would exceed `2 × batch` objects first flushes `batch`.
 * - A bound on the bytes cached (`maxCachedBytes`): when a free crosses it, half of every class's
 *   stack goes back under one acquisition (tcmalloc's rule).
 * - Requests larger than the largest class, or aligned beyond it, go straight to the heap's buddy
 *   blocks (one acquisition each); if the heap is full, the cache flushes itself and retries once.
 * - Every cached object is tagged with this cache's worker slot in its state byte, so
 *   `heap.reclaim(workerId)` can return the cache of a worker that died without flushing.
 * - A block may be freed in any worker: it goes into the freeing worker's cache.
 */
import { type Adaptor, InvalidArgumentError, type Layout, type Usage } from '@allot/core';
import { ThreadCacheError, ThreadCacheErrorCode } from './errors';
import { holderTag } from './heap-lock';
import { SharedHeapImpl } from './shared-heap';
import type { SharedHeap, WorkerCacheStats } from './shared-heap-types';
import {
  FIGURE_BATCHES_MOVED,
  FIGURE_OBJECTS_MOVED,
  OBJECT_CACHED,
  OBJECT_LIVE,
  SLOT_BATCHES,
  SLOT_CACHED_BYTES,
  SLOT_CACHED_COUNT,
  SLOT_CONTENDED,
  SLOT_HITS,
  SLOT_LOCKS,
  SLOT_MISSES,
  WORKER_ID_STRIDE,
} from './shared-layout';
import { batchSize, UNIT_BYTES } from './size-classes';

export interface ThreadCacheOptions {
  /**
   * Most bytes of free objects the cache keeps; crossing it flushes half of every class. Larger
   * caches take the lock less often and strand more memory.
   * @defaultValue 1 MiB
   */
  readonly maxCachedBytes?: number;
}

/** A worker's cache over a shared heap. Dispose it (or `flush()`) before the worker exits. */
export interface ThreadCache extends Adaptor<SharedHeap>, Disposable {
  /** Identifies this cache's slot in the heap: pass it to `heap.reclaim` if the worker dies. */
  readonly workerId: number;
  /** Returns every cached object to the heap (one lock acquisition). */
  flush(): void;
  /** This cache's figures, exact (private counters). */
  stats(): WorkerCacheStats;
  /** Bytes `[address, address + size)` of managed memory (see `SharedHeap.view`). */
  view(address: number, size: number): Uint8Array;
  /**
   * Usage as this worker sees it: the heap's, with this cache's objects counted as free. Objects
   * cached by other workers count as allocated.
   */
  usage(): Usage;
  /** The heap's layout, with this cache's objects shown free. */
  layout(): Layout;
  /** Drops the cache and resets the heap (only when no other worker uses it). */
  reset(): void;
  /** Flushes, publishes the figures and frees the worker slot; the cache is closed afterwards. */
  [Symbol.dispose](): void;
}

const DEFAULT_MAX_CACHED_BYTES = 1024 * 1024;

class ThreadCacheImpl implements ThreadCache {
  declare readonly upstream: SharedHeap;
  declare readonly alignment: number;
  declare readonly workerId: number;
  declare private readonly heap: SharedHeapImpl;
  declare private readonly slot: number;
  declare private readonly generation: number;
  /** State byte of objects in this cache. */
  declare private readonly tag: number;
  declare private readonly lockTag: number;
  declare private readonly base: number;
  /** Offsets below this take the fast free path: small-object spans, and below 2^31. */
  declare private readonly fastRange: number;
  /** log2(units per span): a unit's span is `unit >>> spanShift`. */
  declare private readonly spanShift: number;
  declare private readonly largestClass: number;
  declare private readonly maxCachedBytes: number;
  declare private readonly objectState: Uint8Array;
  declare private readonly spanClass: Uint8Array;
  declare private readonly classOfUnits: Uint8Array;
  declare private readonly classBytes: Int32Array;
  /** Per class: first entry in `stack`, entries held, most entries before a flush, batch. */
  declare private readonly stackStart: Int32Array;
  declare private readonly counts: Int32Array;
  declare private readonly limits: Int32Array;
  declare private readonly batches: Int32Array;
  declare private readonly stack: Uint32Array;
  private cachedBytes = 0;
  private hits = 0;
  private misses = 0;
  private batchesMoved = 0;
  private lockAcquisitions = 0;
  private contendedAcquisitions = 0;
  private epoch = 0;
  private closed = false;

  constructor(heap: SharedHeapImpl, options: ThreadCacheOptions) {
    const maxCachedBytes = options.maxCachedBytes ?? DEFAULT_MAX_CACHED_BYTES;
    if (!(maxCachedBytes >= 0)) {
      throw new InvalidArgumentError('maxCachedBytes', maxCachedBytes, 'a number of bytes ≥ 0');
    }
    this.upstream = heap;
    this.heap = heap;
    this.alignment = heap.alignment;
    this.base = heap.base;
    this.fastRange = Math.min(heap.spanRange, 2 ** 31);
    this.spanShift = Math.round(Math.log2(heap.unitsPerSpan));
    this.largestClass = heap.largestClass;
    this.maxCachedBytes = maxCachedBytes;
    this.objectState = heap.objectState;
    this.spanClass = heap.spanClass;
    this.classOfUnits = heap.classOfUnits;
    this.classBytes = Int32Array.from(heap.sizeClasses);
    const stacks = classStacks(heap.sizeClasses);
    this.stackStart = stacks.stackStart;
    this.counts = stacks.counts;
    this.limits = stacks.limits;
    this.batches = stacks.batches;
    this.stack = stacks.stack;
    const { slot, generation, epoch } = heap.registerCache();
    this.slot = slot;
    this.generation = generation;
    this.epoch = epoch;
    this.workerId = generation * WORKER_ID_STRIDE + slot;
    this.tag = OBJECT_CACHED + slot;
    this.lockTag = holderTag(slot);
  }

  allocate(size: number, alignment?: number): number | null {
    // `size` ≤ the largest class (< 2^31) is checked first, so the 32-bit operations are exact.
    if (alignment === undefined && size > 0 && size <= this.largestClass && (size | 0) === size) {
      const c = this.classOfUnits[(size + 15) >>> 4]!;
      const n = this.counts[c]! - 1;
      if (n >= 0) {
        this.counts[c] = n;
        const unit = this.stack[this.stackStart[c]! + n]!;
        this.objectState[unit] = OBJECT_LIVE;
        this.cachedBytes -= this.classBytes[c]!;
        this.hits++;
        return this.base + unit * UNIT_BYTES;
      }
      return this.allocateMiss(c);
    }
    return this.allocateSlow(size, alignment);
  }

  free(address: number): void {
    const offset = address - this.base;
    // Below `fastRange` (≤ 2^31) an offset and its unit index are exact in 32-bit operations;
    // anything else (large blocks, far addresses, errors) takes the slow path.
    if (offset >= 0 && offset < this.fastRange && typeof address === 'number') {
      const unit = offset >>> 4;
      if (unit * UNIT_BYTES === offset) {
        const c1 = this.spanClass[unit >>> this.spanShift]!;
        if (c1 !== 0 && this.objectState[unit] === OBJECT_LIVE) {
          const c = c1 - 1;
          const n = this.counts[c]!;
          if (n < this.limits[c]!) {
            this.objectState[unit] = this.tag;
            this.stack[this.stackStart[c]! + n] = unit;
            this.counts[c] = n + 1;
            this.hits++;
            if ((this.cachedBytes += this.classBytes[c]!) > this.maxCachedBytes) this.shrink();
            return;
          }
          this.freeOverflow(c, unit);
          return;
        }
      }
    }
    this.freeSlow(address);
  }

  usableSize(address: number): number {
    return this.heap.usableSize(address);
  }

  owns(address: number): boolean {
    return this.heap.owns(address);
  }

  usage(): Usage {
    return withCached(this.heap.usage(), this.counts, this.classBytes, this.cachedBytes);
  }

  layout(): Layout {
    return this.heap.layoutFor(this.slot);
  }

  reset(): void {
    this.dropAll();
    this.heap.reset();
    this.enter();
    this.leave();
  }

  flush(): void {
    this.enter();
    try {
      this.giveAll();
    } finally {
      this.leave();
    }
  }

  stats(): WorkerCacheStats {
    return {
      workerId: this.workerId,
      hits: this.hits,
      misses: this.misses,
      batchesMoved: this.batchesMoved,
      lockAcquisitions: this.lockAcquisitions,
      contendedAcquisitions: this.contendedAcquisitions,
      cachedBytes: this.cachedBytes,
      cachedObjects: this.cachedCount(),
    };
  }

  view(address: number, size: number): Uint8Array {
    return this.heap.view(address, size);
  }

  [Symbol.dispose](): void {
    if (this.closed) return;
    this.enter();
    try {
      this.giveAll();
      this.publish();
      this.heap.retireSlot(this.slot);
      this.closed = true;
      // Every later free overflows into freeOverflow, which sees `closed` and throws.
      this.limits.fill(0);
    } finally {
      this.leave();
    }
  }

  // ---------------------------------------------------------------- misses

  /** Refills class `c` with one batch; returns the objects now in its stack. */
  private refill(c: number): number {
    this.misses++;
    this.enter();
    try {
      let got = this.heap.takeObjects(
        c,
        this.batches[c]!,
        this.stack,
        this.stackStart[c]!,
        this.tag,
      );
      if (got === 0 && this.cachedCount() > 0) {
        // Objects of other classes may keep spans alive: return them and try once more.
        this.giveAll();
        got = this.heap.takeObjects(c, this.batches[c]!, this.stack, this.stackStart[c]!, this.tag);
      }
      if (got > 0) this.moved(got);
      // Lowest address on top: the cache hands objects out in address order.
      const start = this.stackStart[c]!;
      this.stack.subarray(start, start + got).reverse();
      this.counts[c] = got;
      this.cachedBytes += got * this.classBytes[c]!;
      return got;
    } finally {
      this.leave();
    }
  }

  /** Class `c`'s stack is empty: refill it, then pop. */
  private allocateMiss(c: number): number | null {
    const n = this.refill(c) - 1;
    if (n < 0) return null;
    this.counts[c] = n;
    const unit = this.stack[this.stackStart[c]! + n]!;
    this.objectState[unit] = OBJECT_LIVE;
    this.cachedBytes -= this.classBytes[c]!;
    return this.base + unit * UNIT_BYTES;
  }

  private allocateSlow(size: number, alignment: number | undefined): number | null {
    const c = this.heap.classFor(size, alignment); // validates, throws before any change
    if (c >= 0) {
      const n = this.counts[c]! - 1;
      if (n < 0) return this.allocateMiss(c);
      this.counts[c] = n;
      const unit = this.stack[this.stackStart[c]! + n]!;
      this.objectState[unit] = OBJECT_LIVE;
      this.cachedBytes -= this.classBytes[c]!;
      this.hits++;
      return this.base + unit * UNIT_BYTES;
    }
    this.misses++;
    this.enter();
    try {
      let address = this.heap.buddy.allocate(size, alignment);
      if (address === null && this.cachedCount() > 0) {
        this.giveAll();
        address = this.heap.buddy.allocate(size, alignment);
      }
      return address;
    } finally {
      this.leave();
    }
  }

  /** A free into a full stack: flush one batch, then cache the object. */
  private freeOverflow(c: number, unit: number): void {
    this.misses++;
    this.enter();
    try {
      const batch = this.batches[c]!;
      const n = this.counts[c]! - batch;
      this.heap.giveObjects(c, this.stack, this.stackStart[c]! + n, batch);
      this.moved(batch);
      this.counts[c] = n;
      this.cachedBytes -= batch * this.classBytes[c]!;
      this.objectState[unit] = this.tag;
      this.stack[this.stackStart[c]! + n] = unit;
      this.counts[c] = n + 1;
      this.cachedBytes += this.classBytes[c]!;
    } finally {
      this.leave();
    }
  }

  /**
   * What the fast path did not take: a small object beyond `fastRange`, a large block, or an
   * address to refuse (the error is thrown before any change).
   */
  private freeSlow(address: number): void {
    const heap = this.heap;
    const offset = heap.checkAddress(address);
    if (offset < heap.spanRange) {
      const span = Math.floor(offset / heap.spanSize);
      const c1 = this.spanClass[span]!;
      if (c1 !== 0) {
        const unit = offset / UNIT_BYTES;
        if (Number.isInteger(unit) && this.objectState[unit] === OBJECT_LIVE) {
          const c = c1 - 1;
          const n = this.counts[c]!;
          if (n >= this.limits[c]!) {
            this.freeOverflow(c, unit);
            return;
          }
          this.objectState[unit] = this.tag;
          this.stack[this.stackStart[c]! + n] = unit;
          this.counts[c] = n + 1;
          this.hits++;
          if ((this.cachedBytes += this.classBytes[c]!) > this.maxCachedBytes) this.shrink();
          return;
        }
        throw heap.invalidSmallFree(address, offset, span, c1 - 1, this.tag);
      }
    }
    this.misses++;
    this.enter();
    try {
      heap.buddy.free(address);
    } finally {
      this.leave();
    }
  }

  /** Over `maxCachedBytes`: return half of every class's stack (the entries freed longest ago). */
  private shrink(): void {
    this.misses++;
    this.enter();
    try {
      let moved = 0;
      for (let c = 0; c < this.counts.length; c++) {
        const n = this.counts[c]!;
        if (n === 0) continue;
        const give = Math.ceil(n / 2);
        const start = this.stackStart[c]!;
        this.heap.giveObjects(c, this.stack, start, give);
        this.stack.copyWithin(start, start + give, start + n);
        this.counts[c] = n - give;
        this.cachedBytes -= give * this.classBytes[c]!;
        moved += give;
      }
      this.moved(moved);
    } finally {
      this.leave();
    }
  }

  /** Objects in the cache (the sum of the stacks). */
  private cachedCount(): number {
    return sum(this.counts);
  }

  /** Returns every cached object (the caller holds the lock). */
  private giveAll(): void {
    let moved = 0;
    for (let c = 0; c < this.counts.length; c++) {
      const n = this.counts[c]!;
      if (n === 0) continue;
      this.heap.giveObjects(c, this.stack, this.stackStart[c]!, n);
      this.counts[c] = 0;
      moved += n;
    }
    this.moved(moved);
    this.cachedBytes = 0;
  }

  /** Forgets every cached object without returning it (the heap was reset). */
  private dropAll(): void {
    this.counts.fill(0);
    this.cachedBytes = 0;
  }

  private moved(objects: number): void {
    if (objects === 0) return;
    this.batchesMoved++;
    const f = this.heap.figures;
    f[FIGURE_BATCHES_MOVED]!++;
    f[FIGURE_OBJECTS_MOVED]! += objects;
  }

  /** Takes the heap's lock for this cache; checks the slot and the heap's epoch. */
  private enter(): void {
    if (this.closed) throw closedError(this.workerId, 'disposed');
    const contended = this.heap.enter(this.lockTag);
    this.lockAcquisitions++;
    if (contended) this.contendedAcquisitions++;
    if (!this.heap.slotIsCurrent(this.slot, this.generation)) {
      this.closed = true;
      this.limits.fill(0);
      this.heap.leave();
      throw closedError(this.workerId, 'reclaimed by heap.reclaim');
    }
    const epoch = this.heap.epoch();
    if (epoch !== this.epoch) {
      this.dropAll();
      this.epoch = epoch;
    }
  }

  /** Publishes the figures to the slot and releases the lock. */
  private leave(): void {
    this.publish();
    this.heap.leave();
  }

  private publish(): void {
    const sf = this.heap.slotFigures;
    const s = this.heap.slotFigureIndex(this.slot);
    sf[s + SLOT_HITS] = this.hits;
    sf[s + SLOT_MISSES] = this.misses;
    sf[s + SLOT_BATCHES] = this.batchesMoved;
    sf[s + SLOT_LOCKS] = this.lockAcquisitions;
    sf[s + SLOT_CONTENDED] = this.contendedAcquisitions;
    sf[s + SLOT_CACHED_BYTES] = this.cachedBytes;
    sf[s + SLOT_CACHED_COUNT] = this.cachedCount();
  }
}

/** Per class, a stack of `2 × batch` entries in one array: where each starts, and its limits. */
function classStacks(sizeClasses: readonly number[]) {
  const classes = sizeClasses.length;
  const stackStart = new Int32Array(classes);
  const counts = new Int32Array(classes);
  const limits = new Int32Array(classes);
  const batches = new Int32Array(classes);
  let entries = 0;
  for (let c = 0; c < classes; c++) {
    const batch = batchSize(sizeClasses[c]!);
    batches[c] = batch;
    limits[c] = 2 * batch;
    stackStart[c] = entries;
    entries += 2 * batch;
  }
  return { stackStart, counts, limits, batches, stack: new Uint32Array(entries) };
}

function closedError(workerId: number, why: string): ThreadCacheError {
  return new ThreadCacheError(
    ThreadCacheErrorCode.CacheClosed,
    `The thread cache ${workerId} is closed (${why}); make a new one with threadCache(heap).`,
  );
}

function sum(values: Int32Array): number {
  let total = 0;
  for (let i = 0; i < values.length; i++) total += values[i]!;
  return total;
}

/** The heap's usage `u` as one cache sees it: its cached objects (`counts` per class) are free. */
function withCached(
  u: Usage,
  counts: Int32Array,
  classBytes: Int32Array,
  cachedBytes: number,
): Usage {
  let largest = u.largestFreeBlock;
  for (let c = 0; c < counts.length; c++) {
    if (counts[c]! > 0 && classBytes[c]! > largest) largest = classBytes[c]!;
  }
  const cachedCount = sum(counts);
  return {
    capacity: u.capacity,
    allocatedBytes: u.allocatedBytes - cachedBytes,
    freeBytes: u.freeBytes + cachedBytes,
    overheadBytes: u.overheadBytes,
    largestFreeBlock: largest,
    liveCount: u.liveCount - cachedCount,
    freeBlockCount: u.freeBlockCount + cachedCount,
  };
}

/**
 * Makes this worker's cache over `heap` (from `sharedHeap` or `attachHeap`). Use one cache per
 * worker, and dispose it (`using cache = threadCache(heap)`, or `cache[Symbol.dispose]()`) before
 * the worker exits; if the worker dies first, `heap.reclaim(cache.workerId)` recovers its objects.
 *
 * @throws InvalidArgumentError when `heap` is not a shared heap; ThreadCacheError
 * (`ALLOT_NO_WORKER_SLOT`) when every worker slot is taken.
 */
export function threadCache(heap: SharedHeap, options: ThreadCacheOptions = {}): ThreadCache {
  if (!(heap instanceof SharedHeapImpl)) {
    throw new InvalidArgumentError(
      'heap',
      heap,
      'a heap from sharedHeap() or attachHeap() of this copy of @allot/thread-cache',
    );
  }
  return new ThreadCacheImpl(heap, options);
}
