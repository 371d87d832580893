/**
 * The heap's lock and its worker slots: taking the lock (and refusing when the heap is poisoned),
 * registering a thread cache in a slot, retiring a slot, and reclaiming what the cache of a worker
 * that died still held.
 *
 * Each slot is one cache line of the state buffer: its state (free or active), its generation
 * (bumped on each registration, so a `workerId` names one registration only) and the figures its
 * cache publishes whenever it holds the lock.
 *
 * Reclaim: a dead worker's cached objects carry `OBJECT_CACHED + slot` in their state byte, so
 * `reclaim(workerId)` scans the object states and gives each back to the central lists. A worker
 * that died holding the lock may have left the lists half-updated: the heap is then poisoned
 * (closed for good), and every waiter and every later call throws `ALLOT_HEAP_POISONED`.
 */
import type { Buddy } from '@allot/buddy';
import { InvalidArgumentError } from '@allot/core';
import { CentralLists } from './central-lists';
import { ThreadCacheError, ThreadCacheErrorCode } from './errors';
import { ANONYMOUS_TAG, HeapLock, holderSlot } from './heap-lock';
import type { HeapViewOptions, ReclaimResult } from './shared-heap-types';
import {
  FIGURE_CONTENDED,
  FIGURE_LOCK_ACQUISITIONS,
  FIGURE_RECLAIMED_BYTES,
  FIGURE_RECLAIMED_OBJECTS,
  FIGURE_RETIRED_BATCHES,
  FIGURE_RETIRED_CONTENDED,
  FIGURE_RETIRED_HITS,
  FIGURE_RETIRED_LOCKS,
  FIGURE_RETIRED_MISSES,
  OBJECT_CACHED,
  type SharedHeapConfig,
  SLOT_ACTIVE,
  SLOT_BATCHES,
  SLOT_CONTENDED,
  SLOT_FREE,
  SLOT_GENERATION,
  SLOT_HITS,
  SLOT_LOCKS,
  SLOT_MISSES,
  SLOT_STATE,
  WORD_EPOCH,
  WORD_POISONED,
  WORD_POISONED_BY,
  WORKER_ID_STRIDE,
  WORKER_LINE_BYTES,
} from './shared-layout';

/** @internal The lock, the worker slots and reclaim, over the central lists. */
export class WorkerSlots extends CentralLists {
  declare readonly maxWorkers: number;
  declare readonly slotWords: Int32Array;
  declare readonly slotFigures: Float64Array;
  declare readonly lock: HeapLock;

  constructor(
    config: SharedHeapConfig,
    state: SharedArrayBuffer,
    heapBuddy: Buddy,
    options: HeapViewOptions,
  ) {
    super(config, state, heapBuddy);
    this.maxWorkers = config.maxWorkers;
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
    const header = this.header;
    this.lock = new HeapLock(
      new Int32Array(state, config.lockOffset, 1),
      0,
      options,
      () => Atomics.load(header, WORD_POISONED) !== 0,
    );
  }

  // ---------------------------------------------------------------- the lock

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

  // ---------------------------------------------------------------- worker slots

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

  // ---------------------------------------------------------------- workers that died

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
