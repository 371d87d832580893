/**
 * The public face of the shared heap: what `heap.share()` returns, the `SharedHeap` interface and
 * the figures `stats()` and `reclaim()` report. The implementation is `SharedHeapImpl`
 * (`shared-heap.ts`), on top of `WorkerSlots` (`worker-slots.ts`) and `CentralLists`
 * (`central-lists.ts`).
 */
import type { Allocator, Layout, Usage } from '@allot/core';
import type { HeapLockOptions } from './heap-lock';

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
