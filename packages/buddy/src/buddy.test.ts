import { InvalidArgumentError, InvalidFreeError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { buddyIndex, buddyOf, isUpperHalf } from './block-index';
import { buddy } from './buddy';
import { buddyStateBytes, defaultMinBlockSize } from './config';
import { HEADER_BYTES, STATE_VERSION, WORD_DEFERRED, WORD_VERSION } from './state-layout';

const KiB = 1024;

describe('buddy', () => {
  it('splits the smallest sufficient block and merges it back on free', () => {
    const heap = buddy({ capacity: 64 * KiB, minBlockSize: 16 });
    const a = heap.allocate(100)!;
    expect(a).toBe(0);
    expect(heap.usableSize(a)).toBe(128);
    const b = heap.allocate(16)!;
    expect(b).toBe(128); // the 128 B buddy of `a`, split down to 16 B
    expect(heap.stats().freeBlocksByOrder).toEqual([1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    heap.free(a);
    heap.free(b);
    const layout = heap.layout();
    expect(layout.segments).toHaveLength(1);
    expect(layout.segments[0]!.blocks).toEqual([{ address: 0, size: 64 * KiB, free: true }]);
    expect(heap.usage()).toMatchObject({ allocatedBytes: 0, freeBytes: 64 * KiB, liveCount: 0 });
  });

  it('covers a capacity that is not a power of two with several maximal blocks', () => {
    const heap = buddy({ capacity: 7 * KiB + 40, minBlockSize: 16 });
    const segments = heap.layout().segments.map((s) => [s.address, s.size]);
    expect(segments).toEqual([
      [0, 4 * KiB],
      [4 * KiB, 2 * KiB],
      [6 * KiB, KiB],
      [7 * KiB, 32],
    ]);
    const usage = heap.usage();
    expect(usage.freeBytes).toBe(7 * KiB + 32);
    expect(usage.overheadBytes).toBe(8); // the tail shorter than minBlockSize
    expect(usage.largestFreeBlock).toBe(4 * KiB);
    // Every byte but the tail can be handed out.
    const sizes = [4 * KiB, 2 * KiB, KiB, 32];
    for (const size of sizes) expect(heap.allocate(size)).not.toBeNull();
    expect(heap.allocate(16)).toBeNull();
  });

  it('caps blocks at maxBlockSize and never merges across maximal blocks', () => {
    const heap = buddy({ capacity: 10 * KiB, minBlockSize: 64, maxBlockSize: 2 * KiB });
    expect(heap.layout().segments).toHaveLength(5);
    expect(heap.allocate(2 * KiB + 1)).toBeNull();
    const blocks = Array.from({ length: 5 }, () => heap.allocate(2 * KiB)!);
    expect(blocks).toEqual([0, 2048, 4096, 6144, 8192]);
    for (const b of blocks) heap.free(b);
    expect(heap.layout().segments.every((s) => s.blocks.length === 1 && s.blocks[0]!.free)).toBe(
      true,
    );
  });

  it('aligns blocks to their size and honours larger alignments by rounding up', () => {
    const heap = buddy({ capacity: 1 << 20, base: 2 ** 40, minBlockSize: 16 });
    expect(heap.alignment).toBe(16);
    const small = heap.allocate(24)!;
    expect((small - 2 ** 40) % 32).toBe(0);
    const aligned = heap.allocate(8, 4096)!;
    expect(aligned % 4096).toBe(0);
    expect(heap.usableSize(aligned)).toBe(4096);
    expect(heap.stats().internalFragmentationBytes).toBe(32 - 24 + 4096 - 8);
  });

  it('refuses alignments the base cannot give (relative alignment only)', () => {
    const heap = buddy({ capacity: 1 << 16, base: 4096 + 64, minBlockSize: 16 });
    expect(heap.alignment).toBe(16);
    expect(heap.allocate(16, 64)).not.toBeNull();
    expect(heap.allocate(16, 128)).toBeNull();
    const odd = buddy({ capacity: 1 << 16, base: 3, minBlockSize: 16 });
    expect(odd.alignment).toBe(1);
    expect(odd.allocate(10)).toBe(3);
  });

  it('handles addresses above 2^32 and capacities of 2^48 bytes', () => {
    const heap = buddy({ capacity: 2 ** 48, base: 2 ** 52, minBlockSize: 2 ** 32 });
    const a = heap.allocate(2 ** 47)!;
    const b = heap.allocate(3 * 2 ** 32)!;
    const c = heap.allocate(1)!;
    expect(a).toBe(2 ** 52);
    expect(heap.usableSize(b)).toBe(2 ** 34);
    expect(b).toBe(2 ** 52 + 2 ** 47);
    expect(c).toBe(2 ** 52 + 2 ** 47 + 2 ** 34);
    expect(heap.stats().requestedBytes).toBe(2 ** 47 + 3 * 2 ** 32 + 1);
    heap.free(b);
    heap.free(a);
    heap.free(c);
    expect(heap.usage()).toMatchObject({
      allocatedBytes: 0,
      freeBytes: 2 ** 48,
      freeBlockCount: 1,
    });
  });

  it('records requested sizes above 2^32', () => {
    const heap = buddy({ capacity: 2 ** 40, minBlockSize: 2 ** 24 });
    const a = heap.allocate(2 ** 35 + 12345)!;
    expect(heap.layout().segments[0]!.blocks[0]).toEqual({
      address: a,
      size: 2 ** 36,
      free: false,
      requestedSize: 2 ** 35 + 12345,
    });
  });

  it('returns null when exhausted, and for requests above maxBlockSize', () => {
    const heap = buddy({ capacity: 4 * KiB, minBlockSize: 1 * KiB });
    expect(heap.allocate(4 * KiB + 1)).toBeNull();
    expect(heap.allocate(2 * KiB)).not.toBeNull();
    expect(heap.allocate(2 * KiB)).not.toBeNull();
    expect(heap.allocate(1)).toBeNull();
  });

  it('throws typed errors on misuse and changes nothing', () => {
    const heap = buddy({ capacity: 64 * KiB, base: 2 ** 33, minBlockSize: 16 });
    const a = heap.allocate(64)!;
    const b = heap.allocate(16)!;
    heap.free(b);
    const before = { usage: heap.usage(), layout: heap.layout() };
    const reasonOf = (address: number): string => {
      try {
        heap.free(address);
      } catch (error) {
        expect(InvalidFreeError.isInstance(error)).toBe(true);
        return (error as InvalidFreeError).reason;
      }
      return 'no error';
    };
    expect(reasonOf(b)).toBe('double-free');
    expect(reasonOf(a + 16)).toBe('interior-pointer');
    expect(reasonOf(a + 1)).toBe('interior-pointer');
    expect(reasonOf(2 ** 33 + 48 * KiB)).toBe('not-live'); // inside a free block
    expect(reasonOf(2 ** 33 - 16)).toBe('foreign-address');
    expect(reasonOf(2 ** 33 + 64 * KiB)).toBe('foreign-address');
    expect(reasonOf(Number.NaN)).toBe('foreign-address');
    expect(reasonOf('0' as unknown as number)).toBe('foreign-address');
    // Each size the fast path does not take is checked out of line, and refused.
    for (const size of [0, -8, 1.5, 64.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(() => heap.allocate(size)).toThrow(InvalidArgumentError);
    }
    expect(() => heap.allocate('64' as unknown as number)).toThrow(InvalidArgumentError);
    expect(() => heap.allocate(16, 3)).toThrow(InvalidArgumentError);
    expect(heap.allocate(2 ** 40)).toBeNull(); // valid, above maxBlockSize
    expect(() => heap.usableSize(a + 16)).toThrow(InvalidArgumentError);
    expect({ usage: heap.usage(), layout: heap.layout() }).toEqual(before);
    expect(heap.owns(a)).toBe(true);
    expect(heap.owns(b)).toBe(false);
  });

  it('keeps a freed block of a ping-pong off the lists, and shows every view the merged heap', () => {
    const state = new SharedArrayBuffer(buddyStateBytes({ capacity: 1 << 16 }));
    const heap = buddy({ capacity: 1 << 16, state });
    const merged = heap.usage();
    const other = buddy.attach(state);
    const a = heap.allocate(64)!;
    heap.free(a); // deferred: its buddies are free, the next 64 B request may take it back
    expect(new Uint32Array(state)[WORD_DEFERRED]).not.toBe(0);
    const deferredState = new Uint32Array(state.slice(0));
    // A double free of the deferred block is refused, and changes nothing.
    expect(() => heap.free(a)).toThrow(
      expect.objectContaining({ code: 'ALLOT_INVALID_FREE', reason: 'double-free' }),
    );
    expect(new Uint32Array(state)).toEqual(deferredState);
    expect(heap.owns(a)).toBe(false);
    // The same request takes it back: same address, from either view.
    expect(other.allocate(64)).toBe(a);
    heap.free(a);
    // Any other call merges it first: a view's figures are those of the merged heap.
    expect(other.usage()).toEqual(merged);
    expect(new Uint32Array(state)[WORD_DEFERRED]).toBe(0);
    expect(heap.allocate(4096)).toBe(0);
  });

  it('refuses a state buffer of an older layout', () => {
    const heap = buddy({ capacity: 1 << 16 });
    new Uint32Array(heap.state)[WORD_VERSION] = STATE_VERSION - 1;
    expect(() => buddy.attach(heap.state)).toThrow(InvalidArgumentError);
  });

  it('checks its options', () => {
    const bad: Record<string, unknown>[] = [
      { capacity: 0 },
      { capacity: 1.5 },
      { capacity: 1024, base: -1 },
      { capacity: 1024, minBlockSize: 24 },
      { capacity: 1024, minBlockSize: 2048 },
      { capacity: 1024, maxBlockSize: 8 },
      { capacity: 1024, maxBlockSize: 2048 },
      { capacity: 1024, maxBlockSize: 768 },
      { capacity: 2 ** 40, minBlockSize: 1 },
      { capacity: 2 ** 20, base: 2 ** 53 },
      { capacity: 1024, state: new ArrayBuffer(8) },
    ];
    for (const options of bad) {
      expect(() => buddy(options as never), JSON.stringify(options)).toThrow(InvalidArgumentError);
    }
  });

  it('says how much state it needs and lives in a caller-provided buffer', () => {
    const options = { capacity: 1 << 20, minBlockSize: 64 };
    const bytes = buddyStateBytes(options);
    expect(bytes).toBe(HEADER_BYTES + (1 << 14) * 12);
    const state = new SharedArrayBuffer(bytes);
    const heap = buddy({ ...options, state });
    expect(heap.state).toBe(state);
    expect(heap.allocate(64)).toBe(0);
  });

  it('shares one heap between views attached to the same state', () => {
    const state = new SharedArrayBuffer(buddyStateBytes({ capacity: 1 << 16, base: 2 ** 40 }));
    const first = buddy({ capacity: 1 << 16, base: 2 ** 40, state });
    const second = buddy.attach(state);
    const third = buddy.attach(state, { capacity: 1 << 16, base: 2 ** 40 });
    const a = first.allocate(100)!;
    expect(second.owns(a)).toBe(true);
    expect(second.usableSize(a)).toBe(128);
    const b = second.allocate(100)!;
    expect(b).not.toBe(a);
    expect(third.usage()).toEqual(first.usage());
    third.free(a);
    expect(() => first.free(a)).toThrow(InvalidFreeError);
    first.free(b);
    expect(second.layout()).toEqual(first.layout());
    expect(second.usage().liveCount).toBe(0);
    second.reset();
    expect(first.usage().freeBlockCount).toBe(1);
  });

  it('refuses to attach to a buffer that holds no heap, or with other options', () => {
    expect(() => buddy.attach(new ArrayBuffer(4096))).toThrow(InvalidArgumentError);
    expect(() => buddy.attach(new ArrayBuffer(8))).toThrow(InvalidArgumentError);
    const heap = buddy({ capacity: 1 << 16 });
    expect(() => buddy.attach(heap.state, { capacity: 1 << 15 })).toThrow(InvalidArgumentError);
    expect(() => buddy.attach(heap.state, { capacity: 1 << 16, minBlockSize: 32 })).toThrow(
      InvalidArgumentError,
    );
  });

  it('resets to the initial state', () => {
    const heap = buddy({ capacity: 3 * KiB });
    const initial = { usage: heap.usage(), layout: heap.layout() };
    heap.allocate(100);
    heap.allocate(1000);
    heap.reset();
    expect({ usage: heap.usage(), layout: heap.layout() }).toEqual(initial);
  });
});

describe('block-index arithmetic', () => {
  it('flips one bit of the index, exactly, far beyond 2^31', () => {
    expect(buddyIndex(0, 0)).toBe(1);
    expect(buddyIndex(1, 0)).toBe(0);
    expect(buddyIndex(4, 2)).toBe(0);
    expect(buddyIndex(2 ** 31, 31)).toBe(0);
    expect(buddyIndex(2 ** 31, 30)).toBe(2 ** 31 + 2 ** 30);
    expect(buddyIndex(2 ** 32 + 2 ** 31, 31)).toBe(2 ** 32);
    expect(buddyIndex(2 ** 45 + 2 ** 40, 40)).toBe(2 ** 45);
    expect(buddyIndex(2 ** 52, 0)).toBe(2 ** 52 + 1);
    expect(isUpperHalf(2 ** 50 + 2 ** 33 + 2 ** 32, 32)).toBe(true);
    expect(isUpperHalf(2 ** 50 + 2 ** 33, 32)).toBe(false);
    // Agrees with a BigInt XOR.
    for (const [index, order] of [
      [3 * 2 ** 34, 34],
      [7 * 2 ** 20, 20],
      [2 ** 40 - 2 ** 10, 10],
    ] as const) {
      const expected = Number(BigInt(index) ^ (1n << BigInt(order)));
      expect(buddyIndex(index, order)).toBe(expected);
    }
  });

  it('buddyOf, for the indices below 2^32 a heap has, agrees with buddyIndex', () => {
    for (const [index, order] of [
      [0, 0],
      [1, 0],
      [4, 2],
      [2 ** 31, 31],
      [2 ** 31, 30],
      [2 ** 32 - 2, 0],
      [2 ** 32 - 2 ** 10, 10],
      [3 * 2 ** 20, 20],
      [2 ** 31 + 2 ** 30, 30],
    ] as const) {
      expect(buddyOf(index, order)).toBe(buddyIndex(index, order));
    }
  });
});

describe('default minBlockSize', () => {
  it('is 16 B up to 256 MiB, then keeps the state at 2^24 units', () => {
    expect(buddy({ capacity: 1 << 20 }).minBlockSize).toBe(16);
    expect(defaultMinBlockSize(2 ** 28)).toBe(16);
    expect(defaultMinBlockSize(2 ** 28 + 1)).toBe(32);
    expect(defaultMinBlockSize(2 ** 30)).toBe(64);
    expect(defaultMinBlockSize(2 ** 48)).toBe(2 ** 24);
    expect(buddyStateBytes({ capacity: 2 ** 48 })).toBe(HEADER_BYTES + 2 ** 24 * 12);
    expect(buddy({ capacity: 10 }).minBlockSize).toBe(8);
    expect(buddy({ capacity: 10 }).allocate(8)).toBe(0);
  });
});
