import { InvalidArgumentError, InvalidFreeError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { type BlockTable, NIL } from './block-table';
import { FitAllocator } from './fit-allocator';
import { type FreeIndex, fitsIn } from './free-index';

/** A model index: the lowest-address filed block that fits, by a walk (first fit, slowly). */
class WalkIndex implements FreeIndex {
  private readonly filed = new Set<number>();

  constructor(private readonly table: BlockTable) {}

  insert(block: number): void {
    this.filed.add(block);
  }
  remove(block: number): void {
    this.filed.delete(block);
  }
  update(): void {}
  find(size: number, alignment: number, top: number): number {
    let best = NIL;
    for (const b of this.filed) {
      if (fitsIn(this.table, b, size, alignment)) {
        if (best === NIL || this.table.address[b]! < this.table.address[best]!) best = b;
      }
    }
    return best === NIL && fitsIn(this.table, top, size, alignment) ? top : best;
  }
  largest(): number {
    let largest = 0;
    for (const b of this.filed) largest = Math.max(largest, this.table.size[b]!);
    return largest;
  }
  clear(): void {
    this.filed.clear();
  }
}

const fit = (capacity: number, base = 0) =>
  new FitAllocator({ capacity, base }, (table) => new WalkIndex(table));

/** Everything a caller can see of the allocator. */
const state = (a: FitAllocator) => JSON.stringify([a.layout(), a.usage(), a.generation]);

function reason(a: FitAllocator, address: number): string {
  try {
    a.free(address);
  } catch (error) {
    expect(InvalidFreeError.isInstance(error)).toBe(true);
    return (error as InvalidFreeError).reason;
  }
  return 'freed';
}

describe('FitAllocator: the block allocated last', () => {
  it('is live to every lookup before it reaches the address table', () => {
    const a = fit(1024, 4096);
    const x = a.allocate(100)!;
    expect(a.owns(x)).toBe(true);
    expect(a.usableSize(x)).toBe(104);
    expect(a.requestedSize(x)).toBe(100);
    expect(a.usage()).toMatchObject({ liveCount: 1, allocatedBytes: 104, freeBytes: 920 });
    // The next allocation files it; both are found.
    const y = a.allocate(8)!;
    expect(a.owns(x) && a.owns(y)).toBe(true);
    expect(a.usage().liveCount).toBe(2);
  });

  it('refuses a misuse of it with the typed error, and changes nothing', () => {
    const a = fit(1024);
    a.allocate(64);
    const x = a.allocate(64)!; // the block allocated last: key 8
    const before = state(a);
    // A value that is not a number is foreign, even one that converts to x's address.
    expect(reason(a, String(x) as unknown as number)).toBe('foreign-address');
    expect(reason(a, x + 8)).toBe('interior-pointer');
    expect(reason(a, x + 0.5)).toBe('interior-pointer');
    expect(reason(a, Number.NaN)).toBe('foreign-address');
    // Each call the fast path does not take is checked out of line, and refused.
    for (const size of [0, -8, 1.5, Number.NaN, 2 ** 53, Number.POSITIVE_INFINITY, '8']) {
      expect(() => a.allocate(size as number)).toThrow(InvalidArgumentError);
    }
    expect(() => a.allocate(8, 12)).toThrow(InvalidArgumentError);
    expect(() => a.allocate(8, '8' as unknown as number)).toThrow(InvalidArgumentError);
    expect(state(a)).toBe(before);
    a.free(x);
    const freed = state(a);
    expect(reason(a, x)).toBe('double-free');
    expect(state(a)).toBe(freed);
    expect(a.owns(x)).toBe(false);
  });

  it('moves with a compaction, and an explicit default alignment takes the same path', () => {
    const a = fit(1024);
    const x = a.allocate(64)!;
    const y = a.allocate(64, 8)!; // the block allocated last
    a.free(x);
    a.applyCompaction(a.compact());
    expect(a.owns(0)).toBe(true);
    expect(a.owns(y)).toBe(false);
    expect(a.usableSize(0)).toBe(64);
    a.free(0);
    expect(a.usage()).toMatchObject({ liveCount: 0, freeBytes: 1024, freeBlockCount: 1 });
    expect(a.allocate(1024)).toBe(0);
  });
});
