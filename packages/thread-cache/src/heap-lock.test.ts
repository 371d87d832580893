import { isMainThread } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ThreadCacheError, ThreadCacheErrorCode } from './errors';
import {
  ANONYMOUS_TAG,
  HeapLock,
  holderSlot,
  holderTag,
  onMainThread,
  WAITERS_BIT,
} from './heap-lock';

function lockOver(options: ConstructorParameters<typeof HeapLock>[2] = {}) {
  const words = new Int32Array(new SharedArrayBuffer(64));
  return { words, lock: new HeapLock(words, 0, options, () => false) };
}

describe('HeapLock', () => {
  it('keeps the holder in the word and frees it on release', () => {
    const { words, lock } = lockOver();
    expect(lock.acquire(holderTag(5))).toBe(false);
    expect(words[0]).toBe(holderTag(5));
    expect(holderSlot(words[0]!)).toBe(5);
    lock.release();
    expect(words[0]).toBe(0);
    expect(holderSlot(ANONYMOUS_TAG)).toBe(-1);
    expect(holderSlot(holderTag(0) | WAITERS_BIT)).toBe(0);
  });

  it('on the main thread, spins with back-off and fails with a clear error after the bound', () => {
    const { words, lock } = lockOver({ blocking: false, lockTimeout: 5 });
    words[0] = holderTag(3);
    let thrown: unknown;
    try {
      lock.acquire(holderTag(1));
    } catch (error) {
      thrown = error;
    }
    expect(ThreadCacheError.isInstance(thrown)).toBe(true);
    expect((thrown as ThreadCacheError).code).toBe(ThreadCacheErrorCode.LockTimeout);
    expect((thrown as Error).message).toMatch(/worker slot 3.*heap\.reclaim/s);
    expect(words[0]).toBe(holderTag(3)); // untouched
  });

  it('a blocking waiter with a bound also gives up, leaving the word as it found it plus the waiters bit', () => {
    const { words, lock } = lockOver({ blocking: true, lockTimeout: 5 });
    words[0] = ANONYMOUS_TAG;
    expect(() => lock.acquire(holderTag(1))).toThrow(/a heap view without a cache/);
    expect(words[0]).toBe(ANONYMOUS_TAG | WAITERS_BIT);
  });
});

describe('onMainThread', () => {
  it('answers as node:worker_threads does, without importing it', () => {
    expect(onMainThread()).toBe(isMainThread);
    const asked: string[] = [];
    const scope = (answer: boolean) => ({
      process: {
        getBuiltinModule(id: string) {
          asked.push(id);
          return { isMainThread: answer };
        },
      },
    });
    expect(onMainThread(scope(false))).toBe(false);
    expect(onMainThread(scope(true))).toBe(true);
    expect(asked).toEqual(['node:worker_threads', 'node:worker_threads']);
  });

  it('elsewhere, a worker is a thread whose global object is a WorkerGlobalScope', () => {
    class WorkerGlobalScope {}
    expect(onMainThread({})).toBe(true); // a browser's page
    expect(onMainThread({ WorkerGlobalScope })).toBe(false); // a Web Worker
    // A process object without getBuiltinModule (a bundler's polyfill) is not Node.js.
    expect(onMainThread({ process: {}, WorkerGlobalScope })).toBe(false);
  });

  it('makes the default lock spin here, on the main thread, without setting the waiters bit', () => {
    expect(isMainThread).toBe(true);
    const { words, lock } = lockOver({ lockTimeout: 5 });
    words[0] = holderTag(3);
    expect(() => lock.acquire(holderTag(1))).toThrow(/within 5 ms/);
    expect(words[0]).toBe(holderTag(3));
  });
});
