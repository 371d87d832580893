/**
 * The errors of a shared heap beyond `@allot/core`'s: a lock that could not be taken, a heap whose
 * lock holder died, a cache whose slot was reclaimed, and no free worker slot. One class with a
 * stable `code` each; `isInstance` works across duplicated package copies.
 */
import { AllotError } from '@allot/core';

export const ThreadCacheErrorCode = {
  /** The main thread spun for longer than `lockTimeout` without getting the heap's lock. */
  LockTimeout: 'ALLOT_HEAP_LOCK_TIMEOUT',
  /** A worker died holding the heap's lock; its update may be half done, so the heap is closed. */
  Poisoned: 'ALLOT_HEAP_POISONED',
  /** This cache's worker slot was reclaimed (`heap.reclaim`) or the cache was disposed. */
  CacheClosed: 'ALLOT_CACHE_CLOSED',
  /** Every worker slot is taken (`maxWorkers`). */
  NoWorkerSlot: 'ALLOT_NO_WORKER_SLOT',
} as const;

export type ThreadCacheErrorCode = (typeof ThreadCacheErrorCode)[keyof typeof ThreadCacheErrorCode];

const CODES: ReadonlySet<string> = new Set(Object.values(ThreadCacheErrorCode));

export class ThreadCacheError extends AllotError {
  declare readonly code: ThreadCacheErrorCode;

  constructor(code: ThreadCacheErrorCode, message: string) {
    super(code, message);
  }

  static override isInstance(value: unknown): value is ThreadCacheError {
    return AllotError.isInstance(value) && CODES.has(value.code);
  }
}
