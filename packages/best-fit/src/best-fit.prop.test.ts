import type { LayoutBlock } from '@allot/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BestFitAllocator, bestFit, type FitMode } from './best-fit';

const runs = {
  seed: Number(process.env.FC_SEED ?? 0xbe57f17),
  numRuns: Number(process.env.FC_NUM_RUNS ?? 100),
};

const BASE = 2 ** 40 + 2 ** 33;
const CAPACITY = 1 << 14;
const GRANULE = 8;

type Op =
  | { kind: 'alloc'; size: number; alignment: number | undefined }
  | { kind: 'free'; pick: number }
  | { kind: 'compact'; maxMoves: number | undefined; maxBytes: number | undefined };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('alloc' as const),
      size: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 3000 })),
      alignment: fc.constantFrom(undefined, 1, 8, 16, 64, 256),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('compact' as const),
      maxMoves: fc.option(fc.nat({ max: 4 }), { nil: undefined }),
      maxBytes: fc.option(fc.nat({ max: 4096 }), { nil: undefined }),
    }),
  },
);

const padding = (address: number, alignment: number) =>
  (alignment - (address % alignment)) % alignment;
const fits = (b: LayoutBlock, size: number, alignment: number) =>
  b.free && padding(b.address, alignment) + size <= b.size;

/** Coverage, coalescing and accounting of the whole range. */
function checkLayout(a: BestFitAllocator): readonly LayoutBlock[] {
  const blocks = a.layout().segments[0]!.blocks;
  let at = BASE;
  let previousFree = false;
  let allocated = 0;
  let free = 0;
  let freeCount = 0;
  let largest = 0;
  for (const b of blocks) {
    expect(b.address).toBe(at);
    expect(b.size).toBeGreaterThan(0);
    at += b.size;
    if (b.free) {
      expect(previousFree, 'two free blocks are adjacent').toBe(false);
      free += b.size;
      freeCount++;
      largest = Math.max(largest, b.size);
    } else {
      allocated += b.size;
    }
    previousFree = b.free;
  }
  expect(at).toBe(BASE + CAPACITY);
  const u = a.usage();
  expect(u.allocatedBytes).toBe(allocated);
  expect(u.freeBytes).toBe(free);
  expect(u.freeBlockCount).toBe(freeCount);
  expect(u.largestFreeBlock).toBe(largest);
  expect(u.allocatedBytes + u.freeBytes + u.overheadBytes).toBe(CAPACITY);
  return blocks;
}

interface Live {
  address: number;
  size: number;
  tag: number;
}

function fill(bytes: Uint8Array, block: Live): void {
  const at = block.address - BASE;
  for (let i = 0; i < block.size; i++) bytes[at + i] = (block.tag * 31 + i) & 255;
}

function verify(bytes: Uint8Array, block: Live): void {
  const at = block.address - BASE;
  for (let i = 0; i < block.size; i++) {
    if (bytes[at + i] !== ((block.tag * 31 + i) & 255)) {
      expect.fail(`block ${block.tag} at ${block.address} lost byte ${i}`);
    }
  }
}

/** Carries a plan out on `bytes` (memmove each move, in order), then confirms it. */
function compact(a: BestFitAllocator, bytes: Uint8Array, live: Live[], options = {}): number {
  const plan = a.compact(options);
  const moved = new Map<number, number>();
  for (const m of plan.moves) {
    expect(m.to).toBeLessThan(m.from);
    expect(m.to).toBeGreaterThanOrEqual(BASE);
    bytes.copyWithin(m.to - BASE, m.from - BASE, m.from - BASE + m.size);
    moved.set(m.from, m.to);
  }
  a.applyCompaction(plan);
  for (const block of live) {
    block.address = moved.get(block.address) ?? block.address;
    expect(a.owns(block.address)).toBe(true);
    verify(bytes, block);
  }
  return plan.moves.length;
}

function run(mode: FitMode, ops: readonly Op[]): void {
  const a = bestFit({ capacity: CAPACITY, base: BASE, alignment: GRANULE, mode });
  const bytes = new Uint8Array(CAPACITY);
  const live: Live[] = [];
  let tag = 0;
  for (const o of ops) {
    if (o.kind === 'alloc') {
      const before = checkLayout(a);
      const alignment = Math.max(GRANULE, o.alignment ?? GRANULE);
      const need = Math.ceil(o.size / GRANULE) * GRANULE;
      const fitting = before.filter((b) => fits(b, need, alignment));
      const p = a.allocate(o.size, o.alignment);
      if (fitting.length === 0) {
        expect(p).toBeNull();
        continue;
      }
      expect(p, 'a free block fits, yet the request failed').not.toBeNull();
      const address = p!;
      expect(address % alignment).toBe(0);
      const chosen = before.find((b) => b.address <= address && address < b.address + b.size)!;
      expect(fits(chosen, need, alignment)).toBe(true);
      const sizes = fitting.map((b) => b.size);
      if (mode === 'best') {
        // The smallest fitting block, lowest address among equals.
        const best = fitting.find((b) => b.size === Math.min(...sizes))!;
        expect(address).toBe(best.address + padding(best.address, alignment));
      } else if (mode === 'worst') {
        // The largest fitting block, lowest address among equals.
        const worst = fitting.find((b) => b.size === Math.max(...sizes))!;
        expect(address).toBe(worst.address + padding(worst.address, alignment));
      }
      const block = { address, size: o.size, tag: tag++ };
      fill(bytes, block);
      live.push(block);
    } else if (o.kind === 'free') {
      if (live.length === 0) continue;
      const [block] = live.splice(o.pick % live.length, 1);
      verify(bytes, block!);
      a.free(block!.address);
    } else {
      compact(a, bytes, live, { maxMoves: o.maxMoves, maxBytes: o.maxBytes });
    }
    checkLayout(a);
  }
  for (const block of live) verify(bytes, block);
}

describe.each(['best', 'good', 'worst'] as const)('bestFit properties (mode: %s)', (mode) => {
  it('places by its rule, never leaves adjacent free blocks, keeps bytes through compaction', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 150 }), (ops) => run(mode, ops)),
      runs,
    );
  });

  it('repeated compaction passes end with one free block', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 600 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        fc.nat({ max: 3 }),
        (sizes, keep, maxMoves) => {
          const a = bestFit({ capacity: CAPACITY, base: BASE, mode });
          const bytes = new Uint8Array(CAPACITY);
          const live: Live[] = [];
          sizes.forEach((size, i) => {
            const address = a.allocate(size);
            if (address === null) return;
            const block = { address, size, tag: i };
            fill(bytes, block);
            if (keep[i]) live.push(block);
            else a.free(address);
          });
          let passes = 0;
          while (compact(a, bytes, live, { maxMoves: maxMoves + 1 }) > 0) passes++;
          expect(passes).toBeLessThanOrEqual(sizes.length);
          const blocks = checkLayout(a);
          const free = blocks.filter((b) => b.free);
          expect(free.length).toBeLessThanOrEqual(1);
          if (free.length === 1) expect(free[0]!.address + free[0]!.size).toBe(BASE + CAPACITY);
        },
      ),
      runs,
    );
  });
});
