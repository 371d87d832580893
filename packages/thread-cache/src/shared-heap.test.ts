import { InvalidArgumentError, InvalidFreeError, UnsupportedError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { ANONYMOUS_TAG } from './heap-lock';
import { attachHeap, type SharedHeapImpl, sharedHeap } from './shared-heap';
import { CACHE_LINE_BYTES, resolveConfig, sharedHeapStateBytes } from './shared-layout';
import { defaultThreadCacheSizeClasses } from './size-classes';

describe('sharedHeap', () => {
  it('serves small requests from size classes and large ones from buddy blocks', () => {
    const heap = sharedHeap({ capacity: 1 << 22 });
    const small = heap.allocate(100)!;
    expect(heap.usableSize(small)).toBe(112);
    const large = heap.allocate(100_000)!;
    expect(heap.usableSize(large)).toBe(131_072);
    expect(heap.usage()).toMatchObject({ allocatedBytes: 112 + 131_072, liveCount: 2 });
    expect(heap.stats().activeSpans).toBe(1);
    heap.free(small);
    heap.free(large);
    expect(heap.usage()).toEqual({
      capacity: 1 << 22,
      allocatedBytes: 0,
      freeBytes: 1 << 22,
      overheadBytes: 0,
      largestFreeBlock: 1 << 22,
      liveCount: 0,
      freeBlockCount: 1,
    });
    expect(heap.stats().activeSpans).toBe(0); // the empty span went back to the buddy heap
  });

  it('honours alignments with a class whose size is a multiple of it, or a buddy block', () => {
    const heap = sharedHeap({ capacity: 1 << 22, base: 2 ** 40 });
    for (const alignment of [32, 64, 256, 4096, 65_536]) {
      const address = heap.allocate(40, alignment)!;
      expect(address % alignment).toBe(0);
      heap.free(address);
    }
    expect(heap.allocate(40, 2 ** 41)).toBeNull(); // beyond base's own alignment
  });

  it('refuses misuse with typed errors and no change', () => {
    const heap = sharedHeap({ capacity: 1 << 20 });
    const a = heap.allocate(48)!;
    const before = heap.usage();
    expect(() => heap.allocate(0)).toThrow(InvalidArgumentError);
    expect(() => heap.allocate(8, 3)).toThrow(InvalidArgumentError);
    const reason = (address: number) => {
      try {
        heap.free(address);
      } catch (error) {
        return InvalidFreeError.isInstance(error) ? error.reason : String(error);
      }
      return 'freed';
    };
    expect(reason(a + 16)).toBe('interior-pointer');
    expect(reason(a + 48)).toBe('double-free'); // the next object of the span, free centrally
    expect(reason(2 ** 50)).toBe('foreign-address');
    expect(heap.usage()).toEqual(before);
    heap.free(a);
    expect(reason(a)).toBe('double-free');
  });

  it('opens the same heap from its descriptor, which survives structured cloning', () => {
    const heap = sharedHeap({
      capacity: 1 << 20,
      sizeClasses: [16, 48, 256, 1024],
      memory: 'same',
    });
    const address = heap.allocate(200)!;
    heap.view(address, 4).set([1, 2, 3, 4]);
    const other = attachHeap(structuredClone(heap.share()));
    expect(other.sizeClasses).toEqual([16, 48, 256, 1024]);
    expect(Array.from(other.view(address, 4))).toEqual([1, 2, 3, 4]);
    other.free(address);
    expect(heap.usage().liveCount).toBe(0);
    expect(() => attachHeap({ ...heap.share(), version: 99 })).toThrow(InvalidArgumentError);
    expect(() => attachHeap({} as never)).toThrow(InvalidArgumentError);
  });

  it('puts managed memory where asked', () => {
    const same = sharedHeap({ capacity: 1 << 16, memory: 'same' });
    expect(same.memory).toBe(same.share().state);
    expect(same.memoryOffset % same.pageSize).toBe(0);
    const external = new SharedArrayBuffer((1 << 16) + 4096);
    const mine = sharedHeap({ capacity: 1 << 16, memory: external, memoryOffset: 4096 });
    const address = mine.allocate(32)!;
    mine.view(address, 1)[0] = 7;
    expect(new Uint8Array(external)[4096 + address]).toBe(7);
    const none = sharedHeap({ capacity: 1 << 16, memory: 'none' });
    expect(() => none.view(0, 1)).toThrow(UnsupportedError);
    expect(() => sharedHeap({ capacity: 1 << 16, memory: external, memoryOffset: 8192 })).toThrow(
      InvalidArgumentError,
    );
  });

  it('gives the lock word a cache line of its own', () => {
    const config = resolveConfig({ capacity: 1 << 20 });
    expect(config.lockOffset % CACHE_LINE_BYTES).toBe(0);
    expect(config.figuresOffset - config.lockOffset).toBe(CACHE_LINE_BYTES);
    expect(config.lockOffset - config.headerOffset).toBeGreaterThanOrEqual(CACHE_LINE_BYTES);
    expect(sharedHeapStateBytes({ capacity: 1 << 20 })).toBe(config.stateBytes);
  });

  it('checks its options', () => {
    expect(() => sharedHeap({ capacity: 0 })).toThrow(InvalidArgumentError);
    expect(() => sharedHeap({ capacity: 1 << 20, spanSize: 3000 })).toThrow(/spanSize/);
    expect(() => sharedHeap({ capacity: 1 << 20, pageSize: 1 << 17 })).toThrow(/pageSize/);
    expect(() => sharedHeap({ capacity: 1 << 20, sizeClasses: [24] })).toThrow(/sizeClasses/);
    expect(() => sharedHeap({ capacity: 1 << 20, maxWorkers: 300 })).toThrow(/maxWorkers/);
    expect(() => sharedHeap({ capacity: 1 << 20, base: 8 })).toThrow(/base/);
    expect(defaultThreadCacheSizeClasses).toHaveLength(32);
    expect(resolveConfig({ capacity: 1 << 14 }).sizeClasses.at(-1)).toBe(2048);
  });

  it('gives up on a lock held too long, from the main thread, naming the holder', () => {
    const heap = sharedHeap({ capacity: 1 << 20 }) as SharedHeapImpl;
    const slow = attachHeap(heap.share(), { lockTimeout: 5 });
    const lock = new Int32Array(heap.state, heap.config.lockOffset, 1);
    Atomics.store(lock, 0, ANONYMOUS_TAG);
    expect(() => slow.allocate(16)).toThrow(
      /within 5 ms: it is held by a heap view without a cache/,
    );
    Atomics.store(lock, 0, 0);
    expect(slow.allocate(16)).not.toBeNull();
  });

  it('resets to the initial heap and counts lock acquisitions', () => {
    const heap = sharedHeap({ capacity: 1 << 20 });
    const initial = heap.usage();
    for (let i = 1; i < 50; i++) heap.allocate(i * 37);
    heap.reset();
    expect(heap.usage()).toEqual(initial);
    const stats = heap.stats();
    expect(stats.lockAcquisitions).toBeGreaterThanOrEqual(51);
    expect(stats.contendedAcquisitions).toBe(0);
  });
});
