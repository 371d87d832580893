import { InvalidFreeError } from '@allot/core';
import { generator } from '@allot/tooling/bench';
import { describe, expect, it } from 'vitest';
import { ThreadCacheError, ThreadCacheErrorCode } from './errors';
import { sharedHeap } from './shared-heap';
import { batchSize } from './size-classes';
import { threadCache } from './thread-cache';

function codeOf(call: () => unknown): string | undefined {
  try {
    call();
  } catch (error) {
    return ThreadCacheError.isInstance(error) ? error.code : String(error);
  }
  return undefined;
}

describe('threadCache', () => {
  it('refills a batch under one lock acquisition, then serves hits without the lock', () => {
    const heap = sharedHeap({ capacity: 1 << 22 });
    const cache = threadCache(heap);
    const first = cache.allocate(64)!;
    expect(cache.stats()).toMatchObject({
      misses: 1,
      lockAcquisitions: 1,
      batchesMoved: 1,
      cachedObjects: batchSize(64) - 1,
      cachedBytes: (batchSize(64) - 1) * 64,
    });
    cache.free(first);
    for (let i = 0; i < 10_000; i++) cache.free(cache.allocate(60)!);
    expect(cache.stats()).toMatchObject({ hits: 20_001, lockAcquisitions: 1 });
  });

  it('flushes one batch when a class overflows, and half of everything past maxCachedBytes', () => {
    const heap = sharedHeap({ capacity: 1 << 22 });
    const cache = threadCache(heap, { maxCachedBytes: 1 << 20 });
    const batch = batchSize(256);
    const blocks = Array.from({ length: 4 * batch }, () => cache.allocate(256)!);
    const locks = cache.stats().lockAcquisitions;
    for (const b of blocks) cache.free(b);
    // 4 batches came in; the stack holds at most 2 batches, so frees flushed two batches.
    expect(cache.stats().lockAcquisitions - locks).toBe(2);
    expect(cache.stats().cachedObjects).toBeLessThanOrEqual(2 * batch);

    const bounded = threadCache(heap, { maxCachedBytes: 4096 });
    const more = Array.from({ length: 64 }, () => bounded.allocate(256)!);
    for (const b of more) {
      bounded.free(b);
      expect(bounded.stats().cachedBytes).toBeLessThanOrEqual(4096);
    }
  });

  it('sends large requests straight to the heap', () => {
    const heap = sharedHeap({ capacity: 1 << 22 });
    const cache = threadCache(heap);
    const big = cache.allocate(100_000)!;
    expect(cache.usableSize(big)).toBe(131_072);
    expect(cache.stats()).toMatchObject({ misses: 1, lockAcquisitions: 1, cachedObjects: 0 });
    cache.free(big);
    expect(cache.stats()).toMatchObject({ misses: 2, lockAcquisitions: 2 });
    expect(heap.usage().allocatedBytes).toBe(0);
  });

  it('takes a block freed by another cache (cross-worker free) and refuses double frees', () => {
    const heap = sharedHeap({ capacity: 1 << 22 });
    const a = threadCache(heap);
    const b = threadCache(heap);
    const block = a.allocate(100)!;
    const aCached = a.stats().cachedObjects;
    b.free(block);
    expect(b.stats().cachedObjects).toBe(1);
    expect(a.stats().cachedObjects).toBe(aCached);
    expect(b.allocate(100)).toBe(block); // last in, first out
    b.free(block);
    for (const cache of [a, b]) {
      try {
        cache.free(block);
        expect.unreachable();
      } catch (error) {
        expect(InvalidFreeError.isInstance(error) && error.reason).toBe('double-free');
      }
    }
  });

  it('flushes everything back, so the heap returns to its initial state', () => {
    const heap = sharedHeap({ capacity: 1 << 22 });
    const initial = heap.usage();
    const cache = threadCache(heap);
    const random = generator(11);
    const live: number[] = [];
    for (let i = 0; i < 5000; i++) {
      if (live.length > 0 && random() < 0.5) {
        const k = Math.floor(random() * live.length);
        cache.free(live[k]!);
        live[k] = live[live.length - 1]!;
        live.pop();
      } else {
        live.push(cache.allocate(1 + Math.floor(random() ** 3 * 20_000))!);
      }
    }
    for (const address of live) cache.free(address);
    expect(cache.usage().allocatedBytes).toBe(0);
    cache.flush();
    expect(heap.usage()).toEqual(initial);
    expect(heap.stats().activeSpans).toBe(0);
  });

  it('takes at most one lock per 16 operations on a random mix of size classes', () => {
    const heap = sharedHeap({ capacity: 1 << 26 });
    const cache = threadCache(heap);
    const random = generator(42);
    const live = Array.from(
      { length: 2000 },
      () => cache.allocate(1 + Math.floor(random() * 2048))!,
    );
    const before = cache.stats().lockAcquisitions;
    const operations = 200_000;
    for (let i = 0; i < operations / 2; i++) {
      const k = Math.floor(random() * live.length);
      cache.free(live[k]!);
      live[k] = cache.allocate(Math.max(1, Math.round(Math.exp(random() * Math.log(8192)))))!;
    }
    const locks = cache.stats().lockAcquisitions - before;
    expect(locks * 16).toBeLessThanOrEqual(operations);
  });

  it('flushes itself and retries when the heap cannot serve a request', () => {
    const heap = sharedHeap({ capacity: 1 << 18, spanSize: 1 << 12 });
    const cache = threadCache(heap);
    const blocks = Array.from({ length: 100 }, (_, i) => cache.allocate(16 * (1 + (i % 32)))!);
    for (const b of blocks) cache.free(b);
    expect(cache.stats().cachedObjects).toBeGreaterThan(0);
    const whole = cache.allocate(1 << 18)!; // needs every span back in the buddy heap
    expect(whole).not.toBeNull();
    expect(cache.stats().cachedObjects).toBe(0);
    cache.free(whole);
  });

  it('closes on dispose and frees its worker slot', () => {
    const heap = sharedHeap({ capacity: 1 << 20, maxWorkers: 2 });
    const a = threadCache(heap);
    const b = threadCache(heap);
    expect(codeOf(() => threadCache(heap))).toBe(ThreadCacheErrorCode.NoWorkerSlot);
    const block = a.allocate(32)!;
    a.free(block);
    const kept = b.allocate(32)!;
    a[Symbol.dispose]();
    a[Symbol.dispose](); // idempotent
    expect(codeOf(() => a.allocate(32))).toBe(ThreadCacheErrorCode.CacheClosed);
    expect(codeOf(() => a.free(kept))).toBe(ThreadCacheErrorCode.CacheClosed);
    expect(heap.stats().workers.map((w) => w.workerId)).toEqual([b.workerId]);
    {
      using c = threadCache(heap);
      c.free(c.allocate(64)!);
    }
    expect(heap.stats().workers).toHaveLength(1);
    b.free(kept);
    b[Symbol.dispose]();
    expect(heap.usage().allocatedBytes).toBe(0);
  });

  it('is closed once reclaimed, and reclaim returns what it cached', () => {
    const heap = sharedHeap({ capacity: 1 << 20 });
    const initial = heap.usage();
    const cache = threadCache(heap);
    const blocks = Array.from({ length: 40 }, (_, i) => cache.allocate(16 + i * 8)!);
    for (const b of blocks) cache.free(b);
    const cached = cache.stats();
    const result = heap.reclaim(cache.workerId);
    expect(result).toEqual({
      workerId: cache.workerId,
      objects: cached.cachedObjects,
      bytes: cached.cachedBytes,
    });
    expect(heap.usage()).toEqual(initial);
    expect(codeOf(() => cache.allocate(5000))).toBe(ThreadCacheErrorCode.CacheClosed);
  });

  it('drops what it holds when the heap is reset elsewhere', () => {
    const heap = sharedHeap({ capacity: 1 << 20 });
    const cache = threadCache(heap);
    cache.free(cache.allocate(64)!);
    expect(cache.stats().cachedObjects).toBeGreaterThan(0);
    heap.reset();
    cache.free(cache.allocate(100_000)!); // lock acquisitions: the cache sees the new epoch
    expect(cache.stats().cachedObjects).toBe(0);
  });
});

describe('threadCache misuse', () => {
  it('refuses addresses that are not numbers, even when they would coerce to a live block', () => {
    const heap = sharedHeap({ capacity: 1 << 20 });
    const cache = threadCache(heap);
    const block = cache.allocate(16)!;
    expect(block).toBe(0);
    expect(() => cache.free(null as never)).toThrow(InvalidFreeError);
    expect(() => cache.free('0' as never)).toThrow(InvalidFreeError);
    expect(cache.owns(block)).toBe(true);
  });
});
