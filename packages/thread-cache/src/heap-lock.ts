/**
 * The heap's mutex: one Int32 word in shared memory, owner-aware.
 *
 * Design
 * - The word is 0 when free; otherwise it holds the holder's tag (`(slot + 1) × 2`, or the
 *   anonymous tag of a heap view without a cache) and, in bit 0, "a worker may be sleeping on it".
 *   Keeping the holder in the word itself means there is no instant at which the lock is held but
 *   its holder unknown, so `reclaim` can tell that a dead worker holds it.
 * - Acquire is one `Atomics.compareExchange(0 → tag)`. On failure the caller spins, reading with
 *   `Atomics.load` (a critical section is a few microseconds). Then:
 *   - in a worker, it sets bit 0 and sleeps in `Atomics.wait` (Drepper's "mutex 2", with the tag
 *     in the upper bits), waking every {@link WAIT_SLICE_MS} to notice a poisoned heap;
 *   - on the main thread, where sleeping would block the event loop, it keeps spinning with
 *     exponential back-off and throws `ThreadCacheError` (`ALLOT_HEAP_LOCK_TIMEOUT`) after
 *     `lockTimeout` milliseconds, naming the holder.
 * - Release is `Atomics.exchange(word, 0)`, and `Atomics.notify` of one sleeper when bit 0 was set.
 *
 * Every operation on the word is a sequentially consistent atomic, so a release synchronizes with
 * the next acquire: what the holder wrote before releasing happens-before what the next holder
 * reads after acquiring (ECMAScript memory model, "synchronizes-with" on SeqCst events).
 */
import { ThreadCacheError, ThreadCacheErrorCode } from './errors';

/** Lock word bit: a worker may be asleep in `Atomics.wait` on the word. */
export const WAITERS_BIT = 1;
/** Holder tag of heap views used without a cache (`holder` 127). */
export const ANONYMOUS_TAG = 254;
/** Reads of the word before a worker goes to sleep: covers a short critical section. */
const SPIN_READS = 200;
/** A sleeping worker wakes at least this often, in ms, to check whether the heap was poisoned. */
const WAIT_SLICE_MS = 20;
/** Longest back-off on the main thread, in reads of the word between two attempts. */
const MAX_BACKOFF_READS = 4096;
/** Default bound on the main thread's wait for the lock, in ms. */
export const DEFAULT_MAIN_THREAD_LOCK_TIMEOUT = 2000;

/** What {@link onMainThread} reads of the global object. */
export interface ThreadScope {
  readonly process?: { getBuiltinModule?(id: string): unknown };
  readonly WorkerGlobalScope?: unknown;
}

/**
 * Whether this code runs on its runtime's main thread, where sleeping in `Atomics.wait` would stall
 * the event loop (Node.js) or is refused (a browser's page). Node.js (20.16 and later) answers
 * through `process.getBuiltinModule('node:worker_threads')`; elsewhere, as in browsers, a worker is
 * a thread whose global object is a `WorkerGlobalScope`. Nothing is imported, so the package
 * bundles for a browser as it is.
 */
export function onMainThread(scope: ThreadScope = globalThis as ThreadScope): boolean {
  const workerThreads = scope.process?.getBuiltinModule?.('node:worker_threads') as
    | { readonly isMainThread?: unknown }
    | undefined;
  if (typeof workerThreads?.isMainThread === 'boolean') return workerThreads.isMainThread;
  return scope.WorkerGlobalScope === undefined;
}

/** The lock tag of the cache in worker slot `slot`. */
export function holderTag(slot: number): number {
  return (slot + 1) * 2;
}

/** Worker slot holding a lock whose word is `word`, or −1 (free, or an anonymous holder). */
export function holderSlot(word: number): number {
  const tag = word & ~WAITERS_BIT;
  return tag === 0 || tag === ANONYMOUS_TAG ? -1 : tag / 2 - 1;
}

export interface HeapLockOptions {
  /**
   * Sleep in `Atomics.wait` when the lock is busy (true in workers); `false` spins with back-off.
   * @defaultValue `!onMainThread()`: true in a worker thread (Node.js) or Web Worker
   */
  readonly blocking?: boolean;
  /**
   * Most milliseconds to wait for the lock before throwing `ALLOT_HEAP_LOCK_TIMEOUT`.
   * @defaultValue 2000 on the main thread, Infinity in workers
   */
  readonly lockTimeout?: number;
}

export class HeapLock {
  declare private readonly words: Int32Array;
  declare private readonly index: number;
  declare private readonly blocking: boolean;
  declare private readonly timeout: number;
  declare private readonly isPoisoned: () => boolean;

  constructor(
    words: Int32Array,
    index: number,
    options: HeapLockOptions,
    isPoisoned: () => boolean,
  ) {
    this.words = words;
    this.index = index;
    this.blocking = options.blocking ?? !onMainThread();
    this.timeout =
      options.lockTimeout ??
      (this.blocking ? Number.POSITIVE_INFINITY : DEFAULT_MAIN_THREAD_LOCK_TIMEOUT);
    this.isPoisoned = isPoisoned;
  }

  /** Takes the lock for `tag`; returns whether another holder made it wait (contended). */
  acquire(tag: number): boolean {
    if (Atomics.compareExchange(this.words, this.index, 0, tag) === 0) return false;
    this.acquireContended(tag);
    return true;
  }

  release(): void {
    const previous = Atomics.exchange(this.words, this.index, 0);
    if ((previous & WAITERS_BIT) !== 0) Atomics.notify(this.words, this.index, 1);
  }

  /** The word as it is now (racing read). */
  peek(): number {
    return Atomics.load(this.words, this.index);
  }

  /** Frees the lock whatever holds it and wakes every sleeper: only for a holder that died. */
  forceRelease(): void {
    Atomics.exchange(this.words, this.index, 0);
    Atomics.notify(this.words, this.index);
  }

  private acquireContended(tag: number): void {
    const { words, index } = this;
    for (let i = 0; i < SPIN_READS; i++) {
      if (Atomics.load(words, index) === 0 && Atomics.compareExchange(words, index, 0, tag) === 0)
        return;
    }
    if (this.blocking) this.sleepUntilAcquired(tag);
    else this.spinUntilAcquired(tag);
  }

  private sleepUntilAcquired(tag: number): void {
    const { words, index } = this;
    // Once it has slept, a worker takes the lock with the waiters bit set: others may still sleep.
    const mine = tag | WAITERS_BIT;
    const deadline = this.deadline();
    for (;;) {
      let word = Atomics.load(words, index);
      if (word === 0) {
        if (Atomics.compareExchange(words, index, 0, mine) === 0) return;
        continue;
      }
      if ((word & WAITERS_BIT) === 0) {
        const seen = Atomics.compareExchange(words, index, word, word | WAITERS_BIT);
        if (seen !== word) continue;
        word |= WAITERS_BIT;
      }
      Atomics.wait(words, index, word, WAIT_SLICE_MS);
      this.checkWaiting(deadline, word);
    }
  }

  private spinUntilAcquired(tag: number): void {
    const { words, index } = this;
    const deadline = this.deadline();
    let backoff = 16;
    for (;;) {
      for (let i = 0; i < backoff; i++) {
        if (Atomics.load(words, index) === 0) break;
      }
      if (Atomics.compareExchange(words, index, 0, tag) === 0) return;
      if (backoff < MAX_BACKOFF_READS) backoff *= 2;
      this.checkWaiting(deadline, Atomics.load(words, index));
    }
  }

  private deadline(): number {
    return Number.isFinite(this.timeout)
      ? performance.now() + this.timeout
      : Number.POSITIVE_INFINITY;
  }

  private checkWaiting(deadline: number, word: number): void {
    if (this.isPoisoned()) return; // the caller sees it once it holds the lock
    if (deadline !== Number.POSITIVE_INFINITY && performance.now() > deadline) {
      const slot = holderSlot(word);
      const holder =
        slot >= 0 ? `the thread cache in worker slot ${slot}` : 'a heap view without a cache';
      throw new ThreadCacheError(
        ThreadCacheErrorCode.LockTimeout,
        `Could not take the shared heap's lock within ${this.timeout} ms: it is held by ${holder}. ` +
          'If that worker died, call heap.reclaim(workerId) from a thread that is still running; ' +
          'otherwise raise lockTimeout, or use the heap from a worker, where waiting does not block an event loop.',
      );
    }
  }
}
