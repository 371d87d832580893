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
 *
 * Files, from the bottom up
 * - `shared-layout.ts`: where each table lives in the state buffer, and its named words.
 * - `heap-lock.ts`: the lock (a futex word with the holder's slot, and a timeout).
 * - `central-lists.ts` (`CentralLists`): spans per class, the free-object bitmap, object states.
 * - `worker-slots.ts` (`WorkerSlots`): taking the lock, cache registration, reclaim, poisoning.
 * - this file (`SharedHeapImpl`): the `Allocator` contract, figures and layout, `share` and
 *   `view`; `sharedHeap` and `attachHeap`, which make and open the buffers.
 * - `shared-heap-types.ts`: the public interfaces.
 */

import { type Buddy, buddy, buddyStateBytes } from '@allot/buddy';
import {
  InvalidArgumentError,
  type Layout,
  type LayoutBlock,
  type LayoutSegment,
  UnsupportedError,
  type Usage,
} from '@allot/core';
import { ANONYMOUS_TAG } from './heap-lock';
import type {
  HeapViewOptions,
  SharedHeap,
  SharedHeapDescriptor,
  SharedHeapStats,
  WorkerCacheStats,
} from './shared-heap-types';
import {
  CACHE_LINE_BYTES,
  CLASS_SIZE_WORD,
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
  FIGURE_LOCK_ACQUISITIONS,
  FIGURE_OBJECTS_MOVED,
  FIGURE_RECLAIMED_BYTES,
  FIGURE_RECLAIMED_OBJECTS,
  FIGURE_RETIRED_HITS,
  FIGURE_RETIRED_MISSES,
  FIGURE_SPAN_TAIL_BYTES,
  MEMORY_KINDS,
  type MemoryKind,
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
  SLOT_GENERATION,
  SLOT_HITS,
  SLOT_LOCKS,
  SLOT_MISSES,
  SLOT_STATE,
  STATE_MAGIC,
  STATE_VERSION,
  sameMemoryOffset,
  WORD_CLASS_COUNT,
  WORD_EPOCH,
  WORD_MAGIC,
  WORD_MAX_WORKERS,
  WORD_MEMORY_KIND,
  WORD_VERSION,
  WORKER_ID_STRIDE,
  WORKER_LINE_BYTES,
} from './shared-layout';
import { UNIT_BYTES } from './size-classes';
import { WorkerSlots } from './worker-slots';

/** @internal The heap: the `Allocator` contract and the views, over the lock, slots and lists. */
export class SharedHeapImpl extends WorkerSlots implements SharedHeap {
  declare readonly alignment: number;
  declare readonly pageSize: number;
  declare readonly sizeClasses: readonly number[];
  declare readonly memory: SharedArrayBuffer | null;
  declare readonly memoryOffset: number;
  declare readonly memoryKind: MemoryKind;
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
    super(config, state, heapBuddy, options);
    this.alignment = UNIT_BYTES;
    this.pageSize = config.pageSize;
    this.sizeClasses = config.sizeClasses;
    this.memory = memory;
    this.memoryOffset = memoryOffset;
    this.memoryKind = memoryKind;
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

  // ---------------------------------------------------------------- sharing and views

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
}

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
