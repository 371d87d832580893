import { InvalidArgumentError, InvalidFreeError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { firstFit } from './first-fit';

const BASE = 2 ** 40;

/** Free blocks as [offset from `base`, size]. */
function freeBlocks(a: ReturnType<typeof firstFit>, base = BASE) {
  return a
    .layout()
    .segments[0]!.blocks.filter((b) => b.free)
    .map((b) => [b.address - base, b.size]);
}

describe('firstFit', () => {
  it('places blocks lowest-address first and coalesces on free', () => {
    const a = firstFit({ capacity: 1024, base: BASE });
    const x = a.allocate(100)!;
    const y = a.allocate(50)!;
    const z = a.allocate(8)!;
    expect([x, y, z].map((p) => p - BASE)).toEqual([0, 104, 160]);
    expect(a.usableSize(x)).toBe(104);
    a.free(x);
    a.free(z);
    expect(freeBlocks(a)).toEqual([
      [0, 104],
      [160, 864],
    ]);
    // A 40-byte request fits the first hole.
    expect(a.allocate(40)! - BASE).toBe(0);
    a.free(BASE);
    a.free(y);
    expect(freeBlocks(a)).toEqual([[0, 1024]]);
    expect(a.usage()).toEqual({
      capacity: 1024,
      allocatedBytes: 0,
      freeBytes: 1024,
      overheadBytes: 0,
      largestFreeBlock: 1024,
      liveCount: 0,
      freeBlockCount: 1,
    });
  });

  it('keeps the padding of an aligned request as a free block', () => {
    const a = firstFit({ capacity: 4096, base: BASE });
    a.allocate(24);
    const p = a.allocate(100, 256)!;
    expect(p - BASE).toBe(256);
    expect(freeBlocks(a)).toEqual([
      [24, 232],
      [360, 4096 - 360],
    ]);
    expect(a.usage().freeBlockCount).toBe(2);
    // The padding serves a later small request.
    expect(a.allocate(200)! - BASE).toBe(24);
  });

  it('records the requested size in the layout', () => {
    const a = firstFit({ capacity: 256 });
    const p = a.allocate(13)!;
    expect(a.requestedSize(p)).toBe(13);
    expect(a.layout().segments[0]!.blocks[0]).toEqual({
      address: 0,
      size: 16,
      free: false,
      requestedSize: 13,
    });
  });

  it('handles an unaligned base', () => {
    const a = firstFit({ capacity: 100, base: 3 });
    const p = a.allocate(8)!;
    expect(p).toBe(8);
    expect(freeBlocks(a, 0)).toEqual([
      [3, 5],
      [16, 87],
    ]);
  });

  it('serves capacities of 2^48 above 2^32', () => {
    const capacity = 2 ** 48;
    const a = firstFit({ capacity, base: BASE });
    const big = a.allocate(2 ** 47)!;
    const next = a.allocate(2 ** 46, 2 ** 40)!;
    expect(big).toBe(BASE);
    expect(next).toBe(BASE + 2 ** 47);
    expect(a.allocate(2 ** 47)).toBeNull();
    const small = a.allocate(24, 4096)!;
    expect(small).toBe(BASE + 2 ** 47 + 2 ** 46);
    a.free(big);
    expect(a.usage().largestFreeBlock).toBe(2 ** 47);
    expect(a.allocate(8)).toBe(BASE);
    a.free(BASE);
    a.free(next);
    a.free(small);
    expect(a.usage().largestFreeBlock).toBe(capacity);
    expect(a.allocate(capacity)).toBe(BASE);
  });

  it('next fit continues after the previous allocation and wraps', () => {
    const a = firstFit({ capacity: 1024, nextFit: true });
    const x = a.allocate(64)!;
    const y = a.allocate(64)!;
    a.free(x);
    // First fit would reuse 0; next fit goes on from 128.
    expect(a.allocate(64)).toBe(128);
    expect(a.allocate(1024 - 192)).toBe(192);
    // Nothing fits above: wraps to the hole at 0.
    expect(a.allocate(64)).toBe(0);
    expect(y).toBe(64);
  });

  it('throws typed errors on misuse and changes nothing', () => {
    const a = firstFit({ capacity: 1024 });
    const p = a.allocate(64)!;
    a.allocate(64);
    a.free(a.allocate(32)!);
    const before = JSON.stringify([a.layout(), a.usage()]);
    for (const size of [0, -8, 1.5, Number.NaN, 2 ** 53, Number.POSITIVE_INFINITY]) {
      expect(() => a.allocate(size)).toThrow(InvalidArgumentError);
    }
    for (const alignment of [0, 3, -8, 1.5, 24]) {
      expect(() => a.allocate(8, alignment)).toThrow(InvalidArgumentError);
    }
    const reason = (address: number) => {
      try {
        a.free(address);
      } catch (e) {
        expect(InvalidFreeError.isInstance(e)).toBe(true);
        return (e as InvalidFreeError).reason;
      }
      return 'freed';
    };
    expect(reason(p + 8)).toBe('interior-pointer');
    expect(reason(4096)).toBe('foreign-address');
    expect(reason(-1)).toBe('foreign-address');
    expect(reason(128)).toBe('double-free');
    expect(reason(600)).toBe('not-live');
    expect(() => a.usableSize(600)).toThrow(InvalidArgumentError);
    expect(a.owns(600)).toBe(false);
    expect(JSON.stringify([a.layout(), a.usage()])).toBe(before);
    a.free(p);
    expect(reason(p)).toBe('double-free');
  });

  it('rejects bad options', () => {
    expect(() => firstFit({ capacity: 0 })).toThrow(InvalidArgumentError);
    expect(() => firstFit({ capacity: 64, alignment: 12 })).toThrow(InvalidArgumentError);
    expect(() => firstFit({ capacity: 64, base: -1 })).toThrow(InvalidArgumentError);
    expect(() => firstFit({ capacity: 2 ** 53, base: 8 })).toThrow(InvalidArgumentError);
  });

  it('reset returns to the initial state', () => {
    const a = firstFit({ capacity: 512, base: BASE, nextFit: true });
    const initial = JSON.stringify([a.layout(), a.usage()]);
    a.allocate(100);
    a.allocate(7, 64);
    a.reset();
    expect(JSON.stringify([a.layout(), a.usage()])).toBe(initial);
    expect(a.allocate(512)).toBe(BASE);
  });

  it('compacts by a plan the caller carries out', () => {
    const a = firstFit({ capacity: 1024 });
    const blocks = [a.allocate(64)!, a.allocate(64)!, a.allocate(64)!, a.allocate(64)!];
    a.free(blocks[0]!);
    a.free(blocks[2]!);
    const plan = a.compact();
    expect(plan.moves).toEqual([
      { from: 64, to: 0, size: 64 },
      { from: 192, to: 64, size: 64 },
    ]);
    expect(plan.movedBytes).toBe(128);
    expect(a.owns(64)).toBe(true);
    a.applyCompaction(plan);
    expect(a.owns(0) && a.owns(64)).toBe(true);
    expect(a.owns(192)).toBe(false);
    expect(freeBlocks(a, 0)).toEqual([[128, 896]]);
    expect(a.compact().moves).toEqual([]);
    // A stale plan is refused.
    a.free(a.allocate(8)!);
    const stale = a.compact();
    a.allocate(8);
    expect(() => a.applyCompaction(stale)).toThrow(InvalidArgumentError);
  });

  it('compaction respects maxMoves and maxBytes', () => {
    const a = firstFit({ capacity: 1024 });
    const b = [a.allocate(64)!, a.allocate(64)!, a.allocate(128)!, a.allocate(64)!];
    a.free(b[0]!);
    expect(a.compact({ maxMoves: 1 }).moves).toHaveLength(1);
    expect(a.compact({ maxBytes: 191 }).moves).toHaveLength(1);
    expect(a.compact({ maxBytes: 192 }).moves).toHaveLength(2);
    expect(a.compact({ maxMoves: 0 }).moves).toHaveLength(0);
    expect(() => a.compact({ maxMoves: -1 })).toThrow(InvalidArgumentError);
  });
});
