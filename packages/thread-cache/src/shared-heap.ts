/**
 * sharedHeap: one heap whose entire state lives in a SharedArrayBuffer, usable from every worker.
 *
 * Design
 * - Large requests (above the largest size class, or aligned beyond it) are blocks of a buddy
 *   heap (`@allot/buddy`) whose state sits at byte 0 of the state buffer.
 * - Small requests are rounded up to a size class. A class cuts objects from *spans*: buddy blocks
 *   of `spanSize` bytes, aligned to their size. Per class, the spans that have centrally free
 *   objects form a doubly-linked list (span words), and a bitmap with one bit per 16-byte unit marks
 *   the free object starts, so a batch is found with count-leading-zeros over 32 units at a time.
 *   A span whose objects are all free again goes back to the buddy heap at once, so freeing
 *   everything restores the initial heap exactly.
 * - Every object has a state byte: free, LIVE (held by a user) or CACHED + the slot of the worker
 *   whose cache holds it. Caches (`threadCache`) take and return objects in batches; the state byte
 *   is what lets `reclaim` find the objects cached by a worker that died, and what lets `free`
 *   refuse a double free.
 *
 * Memory ordering
 * - Every word of central state (buddy state, span lists, bitmap, figures, the state byte of an
 *   object that is free or moving between a cache and the centre) is read and written only while
 *   holding the heap's lock (`heap-lock.ts`). Acquire and release are SeqCst atomics on the lock
 *   word, so each release synchronizes-with the next acquire, and plain accesses inside critical
 *   sections never race: they are ordered by happens-before.
 * - Outside the lock, only the state byte of an object is touched, and only by the thread that owns
 *   the object at that moment: its user (LIVE → CACHED on free into a cache) or the cache that
 *   holds it (CACHED → LIVE on a cache hit). Ownership moves between threads either under the lock
 *   (a batch refill or flush) or through the user handing the address to another worker; that
 *   hand-off must synchronize (`postMessage`, or an `Atomics` store read by an `Atomics` load), as
 *   it must anyway for the block's bytes. So these plain accesses do not race either.
 * - What does race is read with `Atomics.load`: the lock word, the poisoned flag and the worker
 *   slots' state and generation (read by `reclaim` before it takes the lock). Figures that several
 *   workers update (`stats()`, `usage()`) are read under the lock.
 * - `reclaim(workerId)` reads the state bytes a dead worker wrote without the lock. It must run
 *   after the worker's `'exit'` event: Node has joined the thread by then, which orders the dead
 *   thread's writes before the reclaiming thread's reads.
 */

import { type Buddy, buddy, buddyStateBytes } from '@allot/buddy';
import {
  type Allocator,
  checkRequest,
  InvalidArgumentError,
  InvalidFreeError,
  type InvalidFreeReason,
  type Layout,
  type LayoutBlock,
  type LayoutSegment,
  UnsupportedError,
  type Usage,
} from '@allot/core';
import { ThreadCacheError, ThreadCacheErrorCode } from './errors';
import { ANONYMOUS_TAG, HeapLock, type HeapLockOptions, holderSlot } from './heap-lock';
import {
  CACHE_LINE_BYTES,
  CLASS_CENTRAL_FREE,
  CLASS_PARTIAL_HEAD,
  CLASS_SPANS,
  CLASS_WORDS,
  CONFIG_BASE,
  CONFIG_CAPACITY,
  CONFIG_MEMORY_BYTES,
  CONFIG_MEMORY_OFFSET,
  CONFIG_PAGE_SIZE,
  CONFIG_SPAN_SIZE,
  FIGURE_ACTIVE_SPANS,
  FIGURE_BATCHES_MOVED,
  FIGURE_CONTENDED,
  FIGURE_HELD_BYTES,
  FIGURE_HELD_COUNT,
  FIGURE_LOCK_ACQUISITIONS,
  FIGURE_OBJECTS_MOVED,
  FIGURE_RECLAIMED_BYTES,
  FIGURE_RECLAIMED_OBJECTS,
  FIGURE_RETIRED_BATCHES,
  FIGURE_RETIRED_CONTENDED,
  FIGURE_RETIRED_HITS,
  FIGURE_RETIRED_LOCKS,
  FIGURE_RETIRED_MISSES,
  FIGURE_SPAN_TAIL_BYTES,
  MEMORY_KINDS,
  type MemoryKind,
  NIL,
  OBJECT_CACHED,
  OBJECT_FREE,
  OBJECT_LIVE,
  resolveConfig,
  type SharedHeapConfig,
  type SharedHeapOptions,
  SLOT_ACTIVE,
  SLOT_BATCHES,
  SLOT_CACHED_BYTES,
  SLOT_CACHED_COUNT,
  SLOT_CONTENDED,
  SLOT_FREE,
  SLOT_GENERATION,
  SLOT_HITS,
  SLOT_LOCKS,
  SLOT_MISSES,
  SLOT_STATE,
  SPAN_FREE,
  SPAN_NEXT,
  SPAN_PREV,
  SPAN_WORDS,
  STATE_MAGIC,
  STATE_VERSION,
  sameMemoryOffset,
  WORD_CLASS_COUNT,
  WORD_EPOCH,
  WORD_MAGIC,
  WORD_MAX_WORKERS,
  WORD_MEMORY_KIND,
  WORD_POISONED,
  WORD_POISONED_BY,
  WORD_VERSION,
  WORKER_ID_STRIDE,
  WORKER_LINE_BYTES,
} from './shared-layout';
import { UNIT_BYTES } from './size-classes';

/** What `heap.share()` returns: post it to a worker and open it there with `attachHeap`. */
export interface SharedHeapDescriptor {
  readonly kind: 'allot.shared-heap';
  readonly version: number;
  /** The state buffer: every free list, bitmap, counter and lock word of the heap. */
  readonly state: SharedArrayBuffer;
  /** The buffer holding the managed bytes (`state` itself for `memory: 'same'`), or null. */
  readonly memory: SharedArrayBuffer | null;
  /** Byte offset of address `base` in `memory`. */
  readonly memoryOffset: number;
}

/** Options of one view of a heap (per thread; not stored in shared memory). */
export type HeapViewOptions = HeapLockOptions;

/** Statistics of one thread cache. */
export interface WorkerCacheStats {
  readonly workerId: number;
  /** Allocations and frees served by the cache without the lock. */
  readonly hits: number;
  /** Allocations and frees that took the heap's lock (refills, flushes, large blocks). */
  readonly misses: number;
  /** Batches moved between the cache and the central lists (refills and flushes). */
  readonly batchesMoved: number;
  readonly lockAcquisitions: number;
  /** Lock acquisitions that found the lock held and had to wait. */
  readonly contendedAcquisitions: number;
  /** Bytes of free objects in the cache. */
  readonly cachedBytes: number;
  /** Free objects in the cache. */
  readonly cachedObjects: number;
}

/** Heap figures: usage, lock and batch counters, and each registered cache's published figures. */
export interface SharedHeapStats extends Usage {
  /** Bytes in spans that fit no object (span tails), included in `overheadBytes`. */
  readonly spanTailBytes: number;
  /** Spans cut into small objects now. */
  readonly activeSpans: number;
  /** Bytes held in caches, as the caches last published them (at their last lock acquisition). */
  readonly cachedBytes: number;
  /** Cache hits and misses so far, of every cache (live ones as of their last lock acquisition). */
  readonly hits: number;
  readonly misses: number;
  readonly batchesMoved: number;
  /** Objects moved in batches between caches and the central lists. */
  readonly objectsMoved: number;
  /** Every acquisition of the heap's lock, by caches and by heap views. */
  readonly lockAcquisitions: number;
  readonly contendedAcquisitions: number;
  /** Objects and bytes recovered by `reclaim` from caches of workers that died. */
  readonly reclaimedObjects: number;
  readonly reclaimedBytes: number;
  /** One entry per registered cache, with the figures it last published. */
  readonly workers: readonly WorkerCacheStats[];
}

/** What `reclaim` recovered. */
export interface ReclaimResult {
  readonly workerId: number;
  /** Cached objects returned to the central lists. */
  readonly objects: number;
  readonly bytes: number;
}

/**
 * A heap in shared memory. As an `Allocator` it takes the lock on every call (the naive design);
 * put a `threadCache` in front of it in each worker for the fast path.
 */
export interface SharedHeap extends Allocator {
  readonly base: number;
  readonly capacity: number;
  readonly spanSize: number;
  readonly pageSize: number;
  /** Small-object classes, in bytes; larger requests are buddy blocks. */
  readonly sizeClasses: readonly number[];
  /** Most thread caches registered at once. */
  readonly maxWorkers: number;
  /** The buffer of managed bytes, or null for `memory: 'none'`. */
  readonly memory: SharedArrayBuffer | null;
  /** Byte offset of `base` in `memory`. */
  readonly memoryOffset: number;
  /** A structured-cloneable description of the heap, for `attachHeap` in another worker. */
  share(): SharedHeapDescriptor;
  /**
   * Bytes `[address, address + size)` of managed memory.
   * @throws UnsupportedError for `memory: 'none'`; InvalidArgumentError outside the range.
   */
  view(address: number, size: number): Uint8Array;
  /**
   * Returns every object cached by the thread cache `workerId` to the central lists and frees its
   * slot. Call it only once that worker has exited (after its `'exit'` event).
   *
   * @throws ThreadCacheError (`ALLOT_HEAP_POISONED`) when that worker died holding the heap's lock:
   * the heap is then closed for good, and every waiter wakes up and throws too.
   */
  reclaim(workerId: number): ReclaimResult;
  /** Figures under the lock: usage, counters, registered caches. */
  stats(): SharedHeapStats;
  /** Every segment (buddy root) with its blocks; span objects appear one by one. */
  layout(): Layout;
  /**
   * Forgets every block (under the lock). Caches in other workers must not be in use: they drop
   * what they hold only at their next lock acquisition.
   */
  reset(): void;
}

/** @internal The heap, with the central operations a thread cache runs under the lock. */
export class SharedHeapImpl implements SharedHeap {
  declare readonly alignment: number;
  declare readonly base: number;
  declare readonly capacity: number;
  declare readonly spanSize: number;
  declare readonly pageSize: number;
  declare readonly sizeClasses: readonly number[];
  declare readonly maxWorkers: number;
  declare readonly memory: SharedArrayBuffer | null;
  declare readonly memoryOffset: number;
  declare readonly state: SharedArrayBuffer;
  declare readonly config: SharedHeapConfig;
  declare readonly memoryKind: MemoryKind;
  declare readonly buddy: Buddy;
  declare readonly lock: HeapLock;
  declare readonly header: Int32Array;
  declare readonly figures: Float64Array;
  declare readonly classWords: Uint32Array;
  declare readonly slotWords: Int32Array;
  declare readonly slotFigures: Float64Array;
  declare readonly spanClass: Uint8Array;
  declare readonly spanWords: Uint32Array;
  declare readonly bitmap: Uint32Array;
  declare readonly objectState: Uint8Array;
  /** Units (16 B) of each class, objects per span, class of a request of n units. */
  declare readonly classUnits: Int32Array;
  declare readonly classBytes: Float64Array;
  declare readonly objectsPerSpan: Int32Array;
  declare readonly classOfUnits: Uint8Array;
  declare readonly largestClass: number;
  declare readonly unitsPerSpan: number;
  declare readonly inverseUnitsPerSpan: number;
  declare readonly units: number;
  /** Bytes covered by spans: `spans × spanSize`. */
  declare readonly spanRange: number;
  /** Scratch for single-object moves. */
  declare private readonly scratch: Uint32Array;

  constructor(
    config: SharedHeapConfig,
    state: SharedArrayBuffer,
    memory: SharedArrayBuffer | null,
    memoryOffset: number,
    memoryKind: MemoryKind,
    heapBuddy: Buddy,
    options: HeapViewOptions,
  ) {
    this.config = config;
    this.alignment = UNIT_BYTES;
    this.base = config.base;
    this.capacity = config.capacity;
    this.spanSize = config.spanSize;
    this.pageSize = config.pageSize;
    this.sizeClasses = config.sizeClasses;
    this.maxWorkers = config.maxWorkers;
    this.state = state;
    this.memory = memory;
    this.memoryOffset = memoryOffset;
    this.memoryKind = memoryKind;
    this.buddy = heapBuddy;
    this.header = new Int32Array(state, config.headerOffset, 16);
    this.figures = new Float64Array(state, config.figuresOffset, 16);
    const classCount = config.sizeClasses.length;
    this.classWords = new Uint32Array(state, config.classesOffset, classCount * CLASS_WORDS);
    this.slotWords = new Int32Array(
      state,
      config.workersOffset,
      (config.maxWorkers * WORKER_LINE_BYTES) / 4,
    );
    this.slotFigures = new Float64Array(
      state,
      config.workersOffset,
      (config.maxWorkers * WORKER_LINE_BYTES) / 8,
    );
    this.spanClass = new Uint8Array(state, config.spanClassOffset, config.spans);
    this.spanWords = new Uint32Array(state, config.spanWordsOffset, config.spans * SPAN_WORDS);
    this.bitmap = new Uint32Array(state, config.bitmapOffset, config.units / 32);
    this.objectState = new Uint8Array(state, config.objectStateOffset, config.units);
    const header = this.header;
    this.lock = new HeapLock(
      new Int32Array(state, config.lockOffset, 1),
      0,
      options,
      () => Atomics.load(header, WORD_POISONED) !== 0,
    );
    this.unitsPerSpan = config.unitsPerSpan;
    this.inverseUnitsPerSpan = 1 / config.unitsPerSpan;
    this.units = config.units;
    this.spanRange = config.spans * config.spanSize;
    this.classUnits = Int32Array.from(config.sizeClasses, (size) => size / UNIT_BYTES);
    this.classBytes = Float64Array.from(config.sizeClasses);
    this.objectsPerSpan = Int32Array.from(config.sizeClasses, (size) =>
      Math.floor(config.spanSize / size),
    );
    this.largestClass = config.sizeClasses[classCount - 1]!;
    const maxUnits = this.largestClass / UNIT_BYTES;
    this.classOfUnits = new Uint8Array(maxUnits + 1);
    for (let n = 0, c = 0; n <= maxUnits; n++) {
      while (this.classUnits[c]! < n) c++;
      this.classOfUnits[n] = c;
    }
    this.scratch = new Uint32Array(1);
  }

  /** Writes a fresh heap's header and central lists (the buddy heap is initialised already). */
  initialise(): void {
    const { header, config } = this;
    const words = new Float64Array(this.state, config.headerOffset + 64, 8);
    words[CONFIG_CAPACITY] = config.capacity;
    words[CONFIG_BASE] = config.base;
    words[CONFIG_SPAN_SIZE] = config.spanSize;
    words[CONFIG_PAGE_SIZE] = config.pageSize;
    words[CONFIG_MEMORY_OFFSET] = this.memoryOffset;
    words[CONFIG_MEMORY_BYTES] = this.memory?.byteLength ?? 0;
    header[WORD_CLASS_COUNT] = config.sizeClasses.length;
    header[WORD_MAX_WORKERS] = config.maxWorkers;
    header[WORD_MEMORY_KIND] = MEMORY_KINDS.indexOf(this.memoryKind);
    for (let c = 0; c < config.sizeClasses.length; c++) {
      this.classWords[c * CLASS_WORDS + CLASS_SIZE_WORD] = config.sizeClasses[c]!;
    }
    this.clearCentral();
    header[WORD_VERSION] = STATE_VERSION;
    // Written last: a buffer with the magic in place is complete.
    Atomics.store(header, WORD_MAGIC, STATE_MAGIC);
  }

  // ---------------------------------------------------------------- the Allocator contract

  allocate(size: number, alignment?: number): number | null {
    const c = this.classFor(size, alignment);
    this.enter(ANONYMOUS_TAG);
    try {
      if (c < 0) return this.buddy.allocate(size, alignment);
      const scratch = this.scratch;
      if (this.takeObjects(c, 1, scratch, 0, OBJECT_LIVE) === 0) return null;
      return this.base + scratch[0]! * UNIT_BYTES;
    } finally {
      this.leave();
    }
  }

  free(address: number): void {
    const offset = this.checkAddress(address);
    this.enter(ANONYMOUS_TAG);
    try {
      if (offset < this.spanRange) {
        const span = Math.floor(offset / this.spanSize);
        const c1 = this.spanClass[span]!;
        if (c1 !== 0) {
          const unit = offset / UNIT_BYTES;
          if (this.objectState[unit] !== OBJECT_LIVE) {
            throw this.invalidSmallFree(address, offset, span, c1 - 1, -1);
          }
          this.giveObject(c1 - 1, unit);
          return;
        }
      }
      this.buddy.free(address);
    } finally {
      this.leave();
    }
  }

  usableSize(address: number): number {
    const offset = address - this.base;
    if (offset >= 0 && offset < this.spanRange) {
      const c1 = this.spanClass[Math.floor(offset / this.spanSize)]!;
      if (c1 !== 0) {
        if (this.objectState[offset / UNIT_BYTES] === OBJECT_LIVE) return this.classBytes[c1 - 1]!;
        throw new InvalidArgumentError(
          'address',
          address,
          'the start of a live block of this heap',
        );
      }
    }
    return this.buddy.usableSize(address);
  }

  owns(address: number): boolean {
    const offset = address - this.base;
    if (offset >= 0 && offset < this.spanRange) {
      const c1 = this.spanClass[Math.floor(offset / this.spanSize)]!;
      if (c1 !== 0) return this.objectState[offset / UNIT_BYTES] === OBJECT_LIVE;
    }
    return this.buddy.owns(address);
  }

  usage(): Usage {
    this.enter(ANONYMOUS_TAG);
    try {
      return this.usageLocked();
    } finally {
      this.leave();
    }
  }

  stats(): SharedHeapStats {
    this.enter(ANONYMOUS_TAG);
    try {
      const f = this.figures;
      const workers: WorkerCacheStats[] = [];
      let hits = f[FIGURE_RETIRED_HITS]!;
      let misses = f[FIGURE_RETIRED_MISSES]!;
      let cachedBytes = 0;
      for (let slot = 0; slot < this.maxWorkers; slot++) {
        const w = (slot * WORKER_LINE_BYTES) / 4;
        if (this.slotWords[w + SLOT_STATE] !== SLOT_ACTIVE) continue;
        const s = this.slotFigureIndex(slot);
        const sf = this.slotFigures;
        const entry: WorkerCacheStats = {
          workerId: this.slotWords[w + SLOT_GENERATION]! * WORKER_ID_STRIDE + slot,
          hits: sf[s + SLOT_HITS]!,
          misses: sf[s + SLOT_MISSES]!,
          batchesMoved: sf[s + SLOT_BATCHES]!,
          lockAcquisitions: sf[s + SLOT_LOCKS]!,
          contendedAcquisitions: sf[s + SLOT_CONTENDED]!,
          cachedBytes: sf[s + SLOT_CACHED_BYTES]!,
          cachedObjects: sf[s + SLOT_CACHED_COUNT]!,
        };
        workers.push(entry);
        hits += entry.hits;
        misses += entry.misses;
        cachedBytes += entry.cachedBytes;
      }
      return {
        ...this.usageLocked(),
        spanTailBytes: f[FIGURE_SPAN_TAIL_BYTES]!,
        activeSpans: f[FIGURE_ACTIVE_SPANS]!,
        cachedBytes,
        hits,
        misses,
        batchesMoved: f[FIGURE_BATCHES_MOVED]!,
        objectsMoved: f[FIGURE_OBJECTS_MOVED]!,
        lockAcquisitions: f[FIGURE_LOCK_ACQUISITIONS]!,
        contendedAcquisitions: f[FIGURE_CONTENDED]!,
        reclaimedObjects: f[FIGURE_RECLAIMED_OBJECTS]!,
        reclaimedBytes: f[FIGURE_RECLAIMED_BYTES]!,
        workers,
      };
    } finally {
      this.leave();
    }
  }

  layout(): Layout {
    return this.layoutFor(-1);
  }

  reset(): void {
    this.enter(ANONYMOUS_TAG);
    try {
      this.buddy.reset();
      this.clearCentral();
      Atomics.add(this.header, WORD_EPOCH, 1);
    } finally {
      this.leave();
    }
  }

  // ---------------------------------------------------------------- sharing and workers

  share(): SharedHeapDescriptor {
    return {
      kind: 'allot.shared-heap',
      version: STATE_VERSION,
      state: this.state,
      memory: this.memory,
      memoryOffset: this.memoryOffset,
    };
  }

  view(address: number, size: number): Uint8Array {
    if (this.memory === null) {
      throw new UnsupportedError(
        "This shared heap has no managed memory (memory: 'none'): it places offsets only.",
      );
    }
    const offset = address - this.base;
    if (!(offset >= 0 && offset <= this.capacity && Number.isSafeInteger(offset))) {
      throw new InvalidArgumentError('address', address, 'an address inside the heap');
    }
    if (!Number.isSafeInteger(size) || size < 0 || offset + size > this.capacity) {
      throw new InvalidArgumentError(
        'size',
        size,
        `a range that ends inside the heap (${this.capacity - offset} bytes remain)`,
      );
    }
    return new Uint8Array(this.memory, this.memoryOffset + offset, size);
  }

  reclaim(workerId: number): ReclaimResult {
    const slot = workerId % WORKER_ID_STRIDE;
    const generation = Math.floor(workerId / WORKER_ID_STRIDE);
    if (!Number.isSafeInteger(workerId) || workerId < 0 || slot >= this.maxWorkers) {
      throw new InvalidArgumentError('workerId', workerId, "a thread cache's workerId");
    }
    const w = (slot * WORKER_LINE_BYTES) / 4;
    const registered = () =>
      Atomics.load(this.slotWords, w + SLOT_STATE) === SLOT_ACTIVE &&
      Atomics.load(this.slotWords, w + SLOT_GENERATION) === generation;
    if (!registered()) return { workerId, objects: 0, bytes: 0 };
    if (holderSlot(this.lock.peek()) === slot) this.poison(slot, workerId);
    this.enter(ANONYMOUS_TAG);
    try {
      if (!registered()) return { workerId, objects: 0, bytes: 0 };
      const tag = OBJECT_CACHED + slot;
      const states = this.objectState;
      let objects = 0;
      let bytes = 0;
      for (let unit = 0; unit < this.units; unit++) {
        if (states[unit] !== tag) continue;
        const c = this.spanClass[Math.floor(unit * this.inverseUnitsPerSpan)]! - 1;
        this.giveObject(c, unit);
        objects++;
        bytes += this.classBytes[c]!;
      }
      const f = this.figures;
      f[FIGURE_RECLAIMED_OBJECTS]! += objects;
      f[FIGURE_RECLAIMED_BYTES]! += bytes;
      this.retireSlot(slot);
      return { workerId, objects, bytes };
    } finally {
      this.leave();
    }
  }

  // ---------------------------------------------------------------- internals (under the lock)

  /** @internal Takes the lock; throws when the heap is poisoned. Counts the acquisition. */
  enter(tag: number): boolean {
    const contended = this.lock.acquire(tag);
    if (this.header[WORD_POISONED] !== 0) {
      this.lock.release();
      throw this.poisonedError();
    }
    const f = this.figures;
    f[FIGURE_LOCK_ACQUISITIONS]!++;
    if (contended) f[FIGURE_CONTENDED]!++;
    return contended;
  }

  /** @internal */
  leave(): void {
    this.lock.release();
  }

  /** @internal The class for a request, or −1 for a large block. Validates (throws) first. */
  classFor(size: number, alignment: number | undefined): number {
    const align = checkRequest(size, alignment, UNIT_BYTES);
    const need = Math.max(size, align);
    if (need > this.largestClass) return -1;
    let c = this.classOfUnits[Math.ceil(need / UNIT_BYTES)]!;
    if (align > UNIT_BYTES) {
      if (this.base % align !== 0) return -1;
      const n = this.classUnits.length;
      while (c < n && this.classBytes[c]! % align !== 0) c++;
      if (c === n) return -1;
    }
    return c;
  }

  /**
   * @internal Takes up to `want` objects of class `c` from the central lists (cutting new spans as
   * needed), writes their units to `out[at…]` and marks them `tag`. Returns how many it took.
   */
  takeObjects(c: number, want: number, out: Uint32Array, at: number, tag: number): number {
    const { classWords, spanWords, bitmap, objectState } = this;
    const cw = c * CLASS_WORDS;
    const wordsPerSpan = this.unitsPerSpan / 32;
    let got = 0;
    while (got < want) {
      let span = classWords[cw + CLASS_PARTIAL_HEAD]!;
      if (span === NIL) {
        span = this.newSpan(c);
        if (span === NIL) break;
      }
      const sw = span * SPAN_WORDS;
      let free = spanWords[sw + SPAN_FREE]!;
      const first = span * wordsPerSpan;
      const end = first + wordsPerSpan;
      for (let word = first; word < end && got < want; word++) {
        let bits = bitmap[word]!;
        if (bits === 0) continue;
        const unit0 = word * 32;
        while (bits !== 0 && got < want) {
          const low = bits & -bits;
          bits ^= low;
          const unit = unit0 + 31 - Math.clz32(low);
          objectState[unit] = tag;
          out[at + got] = unit;
          got++;
          free--;
        }
        bitmap[word] = bits;
      }
      spanWords[sw + SPAN_FREE] = free;
      if (free === 0) this.unlinkSpan(c, span);
    }
    classWords[cw + CLASS_CENTRAL_FREE]! -= got;
    const f = this.figures;
    f[FIGURE_HELD_BYTES]! += got * this.classBytes[c]!;
    f[FIGURE_HELD_COUNT]! += got;
    return got;
  }

  /** @internal Returns `count` objects of class `c` (units in `units[from…]`) to the centre. */
  giveObjects(c: number, units: Uint32Array, from: number, count: number): void {
    for (let i = 0; i < count; i++) this.giveObject(c, units[from + i]!);
  }

  /** @internal Returns one object of class `c` to the central lists. */
  giveObject(c: number, unit: number): void {
    this.objectState[unit] = OBJECT_FREE;
    const word = Math.floor(unit / 32);
    this.bitmap[word]! |= 1 << (unit - word * 32);
    const span = Math.floor(unit * this.inverseUnitsPerSpan);
    const sw = span * SPAN_WORDS;
    const free = this.spanWords[sw + SPAN_FREE]! + 1;
    this.spanWords[sw + SPAN_FREE] = free;
    const cw = c * CLASS_WORDS;
    this.classWords[cw + CLASS_CENTRAL_FREE]!++;
    if (free === 1) this.linkSpan(c, span);
    const f = this.figures;
    f[FIGURE_HELD_BYTES]! -= this.classBytes[c]!;
    f[FIGURE_HELD_COUNT]!--;
    if (free === this.objectsPerSpan[c]) this.releaseSpan(c, span);
  }

  /** @internal Registers a cache: a free worker slot, its generation bumped. */
  registerCache(): { slot: number; generation: number; epoch: number } {
    this.enter(ANONYMOUS_TAG);
    try {
      for (let slot = 0; slot < this.maxWorkers; slot++) {
        const w = (slot * WORKER_LINE_BYTES) / 4;
        if (this.slotWords[w + SLOT_STATE] !== SLOT_FREE) continue;
        const generation = (this.slotWords[w + SLOT_GENERATION]! + 1) % 2 ** 30;
        this.slotFigures.fill(0, this.slotFigureIndex(slot), this.slotFigureIndex(slot + 1));
        Atomics.store(this.slotWords, w + SLOT_GENERATION, generation);
        Atomics.store(this.slotWords, w + SLOT_STATE, SLOT_ACTIVE);
        return { slot, generation, epoch: this.header[WORD_EPOCH]! };
      }
    } finally {
      this.leave();
    }
    throw new ThreadCacheError(
      ThreadCacheErrorCode.NoWorkerSlot,
      `Every one of the heap's ${this.maxWorkers} worker slots is taken: dispose caches that are ` +
        'done, reclaim those of workers that died, or create the heap with a larger maxWorkers.',
    );
  }

  /** @internal Whether `slot` is still registered with `generation` (under the lock). */
  slotIsCurrent(slot: number, generation: number): boolean {
    const w = (slot * WORKER_LINE_BYTES) / 4;
    return (
      this.slotWords[w + SLOT_STATE] === SLOT_ACTIVE &&
      this.slotWords[w + SLOT_GENERATION] === generation
    );
  }

  /** @internal Index of slot `slot`'s first f64 in {@link slotFigures}. */
  slotFigureIndex(slot: number): number {
    return (slot * WORKER_LINE_BYTES) / 8;
  }

  /** @internal Folds a slot's figures into the retired totals and frees it (under the lock). */
  retireSlot(slot: number): void {
    const s = this.slotFigureIndex(slot);
    const sf = this.slotFigures;
    const f = this.figures;
    f[FIGURE_RETIRED_HITS]! += sf[s + SLOT_HITS]!;
    f[FIGURE_RETIRED_MISSES]! += sf[s + SLOT_MISSES]!;
    f[FIGURE_RETIRED_BATCHES]! += sf[s + SLOT_BATCHES]!;
    f[FIGURE_RETIRED_LOCKS]! += sf[s + SLOT_LOCKS]!;
    f[FIGURE_RETIRED_CONTENDED]! += sf[s + SLOT_CONTENDED]!;
    sf.fill(0, s + 1, this.slotFigureIndex(slot + 1));
    Atomics.store(this.slotWords, (slot * WORKER_LINE_BYTES) / 4 + SLOT_STATE, SLOT_FREE);
  }

  /** @internal The heap epoch (bumped by reset), read under the lock. */
  epoch(): number {
    return this.header[WORD_EPOCH]!;
  }

  /** @internal Usage from the shared figures; the caller holds the lock. */
  usageLocked(): Usage {
    const b = this.buddy.usage();
    const f = this.figures;
    const activeSpans = f[FIGURE_ACTIVE_SPANS]!;
    const largeBytes = b.allocatedBytes - activeSpans * this.spanSize;
    const largeCount = b.liveCount - activeSpans;
    let centralFreeBytes = 0;
    let centralFreeCount = 0;
    let largestSmall = 0;
    const cw = this.classWords;
    for (let c = 0; c < this.classUnits.length; c++) {
      const n = cw[c * CLASS_WORDS + CLASS_CENTRAL_FREE]!;
      if (n === 0) continue;
      centralFreeBytes += n * this.classBytes[c]!;
      centralFreeCount += n;
      largestSmall = this.classBytes[c]!;
    }
    const allocatedBytes = f[FIGURE_HELD_BYTES]! + largeBytes;
    const freeBytes = b.freeBytes + centralFreeBytes;
    return {
      capacity: this.capacity,
      allocatedBytes,
      freeBytes,
      overheadBytes: this.capacity - allocatedBytes - freeBytes,
      largestFreeBlock: Math.max(b.largestFreeBlock, largestSmall),
      liveCount: f[FIGURE_HELD_COUNT]! + largeCount,
      freeBlockCount: b.freeBlockCount + centralFreeCount,
    };
  }

  /**
   * @internal The layout; objects cached by worker slot `ownSlot` appear free (those of other
   * caches appear live: the heap has handed them out).
   */
  layoutFor(ownSlot: number): Layout {
    this.enter(ANONYMOUS_TAG);
    try {
      const ownTag = ownSlot < 0 ? -1 : OBJECT_CACHED + ownSlot;
      const segments: LayoutSegment[] = [];
      for (const segment of this.buddy.layout().segments) {
        const blocks: LayoutBlock[] = [];
        for (const block of segment.blocks) {
          const offset = block.address - this.base;
          const span = Math.floor(offset / this.spanSize);
          const isSpan =
            !block.free &&
            block.size === this.spanSize &&
            offset < this.spanRange &&
            this.spanClass[span] !== 0;
          if (!isSpan) {
            blocks.push(block);
            continue;
          }
          const c = this.spanClass[span]! - 1;
          const size = this.classBytes[c]!;
          const first = span * this.unitsPerSpan;
          for (let i = 0; i < this.objectsPerSpan[c]!; i++) {
            const unit = first + i * this.classUnits[c]!;
            const state = Atomics.load(this.objectState, unit);
            const free = state === OBJECT_FREE || state === ownTag;
            blocks.push({ address: this.base + unit * UNIT_BYTES, size, free });
          }
        }
        segments.push({ address: segment.address, size: segment.size, blocks });
      }
      return { segments };
    } finally {
      this.leave();
    }
  }

  /**
   * @internal The error for a refused free of an address inside a small-object span (`ownTag`:
   * the calling cache's cached tag, or −1).
   */
  invalidSmallFree(
    address: number,
    offset: number,
    span: number,
    c: number,
    ownTag: number,
  ): InvalidFreeError {
    let reason: InvalidFreeReason = 'not-live';
    const local = offset - span * this.spanSize;
    const size = this.classBytes[c]!;
    const index = Math.floor(local / size);
    if (index < this.objectsPerSpan[c]!) {
      const start = span * this.unitsPerSpan + index * this.classUnits[c]!;
      const state = this.objectState[start]!;
      if (local === index * size) {
        reason =
          state === OBJECT_FREE || state === ownTag || state >= OBJECT_CACHED
            ? 'double-free'
            : 'not-live';
      } else if (state === OBJECT_LIVE) {
        reason = 'interior-pointer';
      }
    }
    return new InvalidFreeError(address, reason, 'shared heap');
  }

  /** @internal Offset of `address` from base; throws InvalidFreeError outside the heap. */
  checkAddress(address: number): number {
    const offset = typeof address === 'number' ? address - this.base : Number.NaN;
    if (!(offset >= 0 && offset < this.capacity)) {
      throw new InvalidFreeError(address, 'foreign-address', 'shared heap');
    }
    return offset;
  }

  private newSpan(c: number): number {
    const address = this.buddy.allocate(this.spanSize);
    if (address === null) return NIL;
    const span = (address - this.base) / this.spanSize;
    const count = this.objectsPerSpan[c]!;
    const step = this.classUnits[c]!;
    const first = span * this.unitsPerSpan;
    const bitmap = this.bitmap;
    const firstWord = first / 32;
    for (let i = 0, local = 0; i < count; i++, local += step) {
      // `local` < unitsPerSpan ≤ 2^26: 32-bit arithmetic is exact on it.
      bitmap[firstWord + (local >>> 5)]! |= 1 << (local & 31);
    }
    this.spanClass[span] = c + 1;
    this.spanWords[span * SPAN_WORDS + SPAN_FREE] = count;
    const cw = c * CLASS_WORDS;
    this.classWords[cw + CLASS_CENTRAL_FREE]! += count;
    this.classWords[cw + CLASS_SPANS]!++;
    this.linkSpan(c, span);
    const f = this.figures;
    f[FIGURE_ACTIVE_SPANS]!++;
    f[FIGURE_SPAN_TAIL_BYTES]! += this.spanSize - count * this.classBytes[c]!;
    return span;
  }

  private releaseSpan(c: number, span: number): void {
    this.unlinkSpan(c, span);
    const wordsPerSpan = this.unitsPerSpan / 32;
    this.bitmap.fill(0, span * wordsPerSpan, (span + 1) * wordsPerSpan);
    this.spanClass[span] = 0;
    this.spanWords.fill(0, span * SPAN_WORDS, (span + 1) * SPAN_WORDS);
    const count = this.objectsPerSpan[c]!;
    const cw = c * CLASS_WORDS;
    this.classWords[cw + CLASS_CENTRAL_FREE]! -= count;
    this.classWords[cw + CLASS_SPANS]!--;
    const f = this.figures;
    f[FIGURE_ACTIVE_SPANS]!--;
    f[FIGURE_SPAN_TAIL_BYTES]! -= this.spanSize - count * this.classBytes[c]!;
    this.buddy.free(this.base + span * this.spanSize);
  }

  private linkSpan(c: number, span: number): void {
    const { classWords, spanWords } = this;
    const cw = c * CLASS_WORDS;
    const head = classWords[cw + CLASS_PARTIAL_HEAD]!;
    const sw = span * SPAN_WORDS;
    spanWords[sw + SPAN_NEXT] = head;
    spanWords[sw + SPAN_PREV] = NIL;
    if (head !== NIL) spanWords[head * SPAN_WORDS + SPAN_PREV] = span;
    classWords[cw + CLASS_PARTIAL_HEAD] = span;
  }

  private unlinkSpan(c: number, span: number): void {
    const { classWords, spanWords } = this;
    const sw = span * SPAN_WORDS;
    const next = spanWords[sw + SPAN_NEXT]!;
    const prev = spanWords[sw + SPAN_PREV]!;
    if (prev === NIL) classWords[c * CLASS_WORDS + CLASS_PARTIAL_HEAD] = next;
    else spanWords[prev * SPAN_WORDS + SPAN_NEXT] = next;
    if (next !== NIL) spanWords[next * SPAN_WORDS + SPAN_PREV] = prev;
  }

  /** Empties every span table, bitmap and object state (spans are gone from the buddy heap). */
  private clearCentral(): void {
    this.spanClass.fill(0);
    this.spanWords.fill(0);
    this.bitmap.fill(0);
    this.objectState.fill(0);
    for (let c = 0; c < this.classUnits.length; c++) {
      const cw = c * CLASS_WORDS;
      this.classWords[cw + CLASS_PARTIAL_HEAD] = NIL;
      this.classWords[cw + CLASS_CENTRAL_FREE] = 0;
      this.classWords[cw + CLASS_SPANS] = 0;
    }
    const f = this.figures;
    f[FIGURE_HELD_BYTES] = 0;
    f[FIGURE_HELD_COUNT] = 0;
    f[FIGURE_ACTIVE_SPANS] = 0;
    f[FIGURE_SPAN_TAIL_BYTES] = 0;
  }

  /** A worker died holding the lock: close the heap for good and wake everyone. */
  private poison(slot: number, workerId: number): never {
    Atomics.store(this.header, WORD_POISONED_BY, slot + 1);
    Atomics.store(this.header, WORD_POISONED, 1);
    this.lock.forceRelease();
    throw new ThreadCacheError(
      ThreadCacheErrorCode.Poisoned,
      `Worker ${workerId} died holding the shared heap's lock, possibly half-way through an update, ` +
        'so the heap is closed: every later call on it throws. Create a new heap.',
    );
  }

  private poisonedError(): ThreadCacheError {
    const by = Atomics.load(this.header, WORD_POISONED_BY);
    return new ThreadCacheError(
      ThreadCacheErrorCode.Poisoned,
      `The shared heap is closed: ${by > 0 ? `the cache in worker slot ${by - 1}` : 'a worker'} ` +
        'died holding its lock, possibly half-way through an update. Create a new heap.',
    );
  }
}

/** Class word holding the class's size in bytes (configuration, for `attachHeap`). */
const CLASS_SIZE_WORD = 3;

/**
 * Makes a heap whose whole state lives in one `SharedArrayBuffer`; post `heap.share()` to a worker
 * and open it there with `attachHeap`.
 *
 * @example
 * ```ts
 * const heap = sharedHeap({ capacity: 64 << 20 });
 * worker.postMessage(heap.share());
 * ```
 * @throws InvalidArgumentError when an option is invalid.
 */
export function sharedHeap(options: SharedHeapOptions, view: HeapViewOptions = {}): SharedHeap {
  const config = resolveConfig(options);
  if (config.base % UNIT_BYTES !== 0) {
    throw new InvalidArgumentError('base', config.base, `a multiple of ${UNIT_BYTES}`);
  }
  const requested = options.memory ?? 'separate';
  let memoryKind: MemoryKind;
  let state: SharedArrayBuffer;
  let memory: SharedArrayBuffer | null;
  let memoryOffset = options.memoryOffset ?? 0;
  if (requested === 'same') {
    memoryKind = 'same';
    memoryOffset = sameMemoryOffset(config);
    state = new SharedArrayBuffer(memoryOffset + config.capacity);
    memory = state;
  } else {
    state = new SharedArrayBuffer(config.stateBytes);
    if (requested === 'separate') {
      memoryKind = 'separate';
      memoryOffset = 0;
      memory = new SharedArrayBuffer(config.capacity);
    } else if (requested === 'none') {
      memoryKind = 'none';
      memoryOffset = 0;
      memory = null;
    } else if (requested instanceof SharedArrayBuffer) {
      memoryKind = 'external';
      if (
        !Number.isSafeInteger(memoryOffset) ||
        memoryOffset < 0 ||
        memoryOffset + config.capacity > requested.byteLength
      ) {
        throw new InvalidArgumentError(
          'memoryOffset',
          memoryOffset,
          `an offset with memoryOffset + capacity ≤ the memory buffer's ${requested.byteLength} bytes`,
        );
      }
      memory = requested;
    } else {
      throw new InvalidArgumentError(
        'memory',
        requested,
        "'separate', 'same', 'none' or a SharedArrayBuffer",
      );
    }
  }
  const heapBuddy = buddy({
    capacity: config.capacity,
    base: config.base,
    minBlockSize: config.pageSize,
    state,
  });
  const heap = new SharedHeapImpl(config, state, memory, memoryOffset, memoryKind, heapBuddy, view);
  heap.initialise();
  return heap;
}

/**
 * Opens a heap from `heap.share()` (in a worker, or anywhere else): every view sees and changes the
 * same heap.
 *
 * @throws InvalidArgumentError when `descriptor` does not describe an intact shared heap.
 */
export function attachHeap(
  descriptor: SharedHeapDescriptor,
  options: HeapViewOptions = {},
): SharedHeap {
  const state = descriptor?.state;
  if (
    typeof descriptor !== 'object' ||
    descriptor === null ||
    descriptor.kind !== 'allot.shared-heap' ||
    !(state instanceof SharedArrayBuffer)
  ) {
    throw new InvalidArgumentError('descriptor', descriptor, 'the result of heap.share()');
  }
  if (descriptor.version !== STATE_VERSION) {
    throw new InvalidArgumentError(
      'descriptor',
      `version ${descriptor.version}`,
      `a shared heap of state version ${STATE_VERSION}`,
    );
  }
  const heapBuddy = buddy.attach(state);
  // The header follows the buddy state, whose size follows from the buddy heap's own options.
  const buddyBytes = buddyStateBytes({
    capacity: heapBuddy.capacity,
    base: heapBuddy.base,
    minBlockSize: heapBuddy.minBlockSize,
  });
  const headerOffset = Math.ceil(buddyBytes / CACHE_LINE_BYTES) * CACHE_LINE_BYTES;
  const header = new Int32Array(state, headerOffset, 16);
  if (Atomics.load(header, WORD_MAGIC) !== STATE_MAGIC || header[WORD_VERSION] !== STATE_VERSION) {
    throw new InvalidArgumentError('descriptor', descriptor, 'an intact shared heap');
  }
  const figures = new Float64Array(state, headerOffset + 64, 8);
  const classCount = header[WORD_CLASS_COUNT]!;
  const provisional = resolveConfig({
    capacity: figures[CONFIG_CAPACITY]!,
    base: figures[CONFIG_BASE]!,
    spanSize: figures[CONFIG_SPAN_SIZE]!,
    pageSize: figures[CONFIG_PAGE_SIZE]!,
    maxWorkers: header[WORD_MAX_WORKERS]!,
  });
  const classWords = new Uint32Array(state, provisional.classesOffset, classCount * CLASS_WORDS);
  const sizeClasses: number[] = [];
  for (let c = 0; c < classCount; c++)
    sizeClasses.push(classWords[c * CLASS_WORDS + CLASS_SIZE_WORD]!);
  const config = resolveConfig({
    capacity: figures[CONFIG_CAPACITY]!,
    base: figures[CONFIG_BASE]!,
    spanSize: figures[CONFIG_SPAN_SIZE]!,
    pageSize: figures[CONFIG_PAGE_SIZE]!,
    maxWorkers: header[WORD_MAX_WORKERS]!,
    sizeClasses,
  });
  if (config.headerOffset !== headerOffset || state.byteLength < config.stateBytes) {
    throw new InvalidArgumentError('descriptor', descriptor, 'an intact shared heap');
  }
  const memoryKind = MEMORY_KINDS[header[WORD_MEMORY_KIND]!] ?? 'none';
  const memory = descriptor.memory ?? null;
  const memoryOffset = figures[CONFIG_MEMORY_OFFSET]!;
  if (memoryKind !== 'none') {
    if (
      !(memory instanceof SharedArrayBuffer) ||
      memory.byteLength !== figures[CONFIG_MEMORY_BYTES]
    ) {
      throw new InvalidArgumentError('descriptor.memory', memory, 'the heap’s memory buffer');
    }
  }
  return new SharedHeapImpl(config, state, memory, memoryOffset, memoryKind, heapBuddy, options);
}
