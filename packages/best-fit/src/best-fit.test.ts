import { InvalidArgumentError, InvalidFreeError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { type BestFitAllocator, bestFit, goodFit, worstFit } from './best-fit';

const BASE = 2 ** 40;

/**
 * Holes of 96, 32, 64, 32 and a tail of 512 bytes, separated by live 8-byte fences:
 * [hole 96][f][hole 32][f][hole 64][f][hole 32][f][tail 512]
 */
function holes(a: BestFitAllocator): number[] {
  const starts: number[] = [];
  for (const size of [96, 32, 64, 32]) {
    starts.push(a.allocate(size)!);
    a.allocate(8);
  }
  a.allocate(512);
  for (const s of starts) a.free(s);
  return starts;
}

function freeBlocks(a: BestFitAllocator, base = BASE) {
  return a
    .layout()
    .segments[0]!.blocks.filter((b) => b.free)
    .map((b) => [b.address - base, b.size]);
}

describe('bestFit', () => {
  it('takes the smallest block that fits, lowest address among equals', () => {
    const a = bestFit({ capacity: 96 + 32 + 64 + 32 + 32 + 512, base: BASE });
    const [h96, h32, h64] = holes(a);
    expect(a.allocate(20)).toBe(h32);
    expect(a.allocate(40)).toBe(h64);
    expect(a.allocate(64)).toBe(h96);
  });

  it('skips blocks too small once padded for alignment', () => {
    const a = bestFit({ capacity: 4096, base: BASE });
    a.allocate(8);
    const small = a.allocate(72)!; // [8, 80): 72 bytes, padding to 64 leaves 16
    a.allocate(8);
    const big = a.allocate(200)!; // [88, 288)
    a.allocate(8);
    a.free(small);
    a.free(big);
    expect(a.allocate(32, 64)).toBe(BASE + 128);
    expect(freeBlocks(a)).toEqual([
      [8, 72],
      [88, 40],
      [160, 128],
      [296, 4096 - 296],
    ]);
  });

  it('good fit serves from a class that always fits, and falls back near exhaustion', () => {
    const a = goodFit({ capacity: 96 + 32 + 64 + 32 + 32 + 512, base: BASE });
    const [h96, , h64] = holes(a);
    // The first non-empty class at or above 40's holds the 64-byte hole.
    expect(a.allocate(40)).toBe(h64);
    // 96 is a class boundary: the 96-byte hole.
    expect(a.allocate(96)).toBe(h96);
    expect(a.allocate(32)).not.toBeNull();
    expect(a.allocate(32)).not.toBeNull();
    expect(a.allocate(24)).not.toBeNull(); // the rest of the 64-byte hole
    expect(a.allocate(8)).toBeNull();
  });

  it('good fit keeps a split block one class high until a search finds it short', () => {
    // 2^20 is a class boundary: the first split leaves 2^20 − 64, a class lower, filed where it was.
    const a = goodFit({ capacity: 2 ** 20, base: BASE });
    expect(a.allocate(64)).toBe(BASE);
    expect(a.usage().largestFreeBlock).toBe(2 ** 20 - 64);
    // Rounded up to 2^20's class, this finds the block, which is short: refiled, then refused.
    expect(a.allocate(2 ** 20 - 8)).toBeNull();
    expect(a.usage()).toMatchObject({ freeBytes: 2 ** 20 - 64, largestFreeBlock: 2 ** 20 - 64 });
    expect(a.allocate(2 ** 20 - 64)).toBe(BASE + 64);
    a.free(BASE);
    expect(a.usage().largestFreeBlock).toBe(64);
    a.free(BASE + 64);
    expect(a.usage()).toMatchObject({ freeBlockCount: 1, largestFreeBlock: 2 ** 20 });
    // Split-and-merge pairs at the boundary, then the whole range in one block.
    for (let i = 0; i < 100; i++) a.free(a.allocate(4096)!);
    expect(a.allocate(2 ** 20)).toBe(BASE);
  });

  it('worst fit takes the largest block', () => {
    const a = worstFit({ capacity: 96 + 32 + 64 + 32 + 32 + 512, base: BASE });
    const [h96, , h64] = holes(a);
    expect(a.allocate(8)).toBe(h96);
    expect(a.usage().largestFreeBlock).toBe(88);
    expect(a.allocate(32)).toBe(h96! + 8);
    expect(a.allocate(8)).toBe(h64);
  });

  it.each(['best', 'good', 'worst'] as const)('%s: capacity 2^48 above 2^32', (mode) => {
    const capacity = 2 ** 48;
    const a = bestFit({ capacity, base: BASE, mode });
    const x = a.allocate(2 ** 47)!;
    const y = a.allocate(2 ** 45 + 8, 2 ** 32)!;
    expect(x % 8).toBe(0);
    expect(y % 2 ** 32).toBe(0);
    expect(a.usableSize(y)).toBe(2 ** 45 + 8);
    expect(a.usage().allocatedBytes).toBe(2 ** 47 + 2 ** 45 + 8);
    a.free(x);
    a.free(y);
    expect(a.usage()).toMatchObject({ freeBlockCount: 1, largestFreeBlock: capacity });
    expect(a.allocate(capacity)).toBe(BASE);
  });

  it.each(['best', 'good', 'worst'] as const)(
    '%s: misuse throws typed errors, changes nothing',
    (mode) => {
      const a = bestFit({ capacity: 1024, mode });
      const p = a.allocate(64)!;
      const q = a.allocate(64)!;
      a.free(q);
      const before = JSON.stringify([a.layout(), a.usage()]);
      for (const size of [0, -1, 0.5, Number.NaN, 2 ** 53]) {
        expect(() => a.allocate(size)).toThrow(InvalidArgumentError);
      }
      expect(() => a.allocate(8, 48)).toThrow(InvalidArgumentError);
      const reason = (address: number) => {
        try {
          a.free(address);
        } catch (e) {
          return InvalidFreeError.isInstance(e) ? e.reason : 'other';
        }
        return 'freed';
      };
      expect(reason(q)).toBe('double-free');
      expect(reason(p + 1)).toBe('interior-pointer');
      expect(reason(2048)).toBe('foreign-address');
      expect(reason(Number.NaN)).toBe('foreign-address');
      expect(reason(512)).toBe('not-live');
      expect(() => a.usableSize(q)).toThrow(InvalidArgumentError);
      expect(JSON.stringify([a.layout(), a.usage()])).toBe(before);
      a.reset();
      expect(a.usage()).toMatchObject({ liveCount: 0, freeBytes: 1024, freeBlockCount: 1 });
    },
  );

  it('rejects an unknown mode', () => {
    expect(() => bestFit({ capacity: 64, mode: 'fast' as never })).toThrow(InvalidArgumentError);
  });

  it.each(['best', 'good', 'worst'] as const)('%s: compaction slides blocks down', (mode) => {
    const a = bestFit({ capacity: 1024, base: BASE, mode });
    const blocks = [64, 32, 128, 16].map((s) => a.allocate(s)!);
    a.free(blocks[0]!);
    a.free(blocks[2]!);
    const plan = a.compact();
    expect(plan.moves.map((m) => [m.from - BASE, m.to - BASE, m.size])).toEqual([
      [64, 0, 32],
      [224, 32, 16],
    ]);
    a.applyCompaction(plan);
    expect(a.compact().moves).toEqual([]);
    expect(a.usage()).toMatchObject({ freeBlockCount: 1, largestFreeBlock: 1024 - 48 });
  });
});
