/**
 * The three-level bitmap against a set of marked bins: after every change, `next` from the probes
 * that matter (0, each marked bin, one past it, each word and summary-word boundary near it) and
 * `highest` agree with the set.
 */
import assert from 'node:assert/strict';
import { NIL } from '@allot/blocks';
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BIN_COUNT, BinBitmap } from './bin-bitmap';

/** FC_NUM_RUNS, FC_SEED and ALLOT_FUZZ apply, as in the conformance suite. */
const runs = propertyParameters({});

/** Bins clustered in a few words and summary groups, so levels empty and refill often. */
const anyBin = fc.oneof(
  fc.integer({ min: 0, max: BIN_COUNT - 1 }),
  fc.integer({ min: 0, max: 95 }),
  fc.integer({ min: 1000, max: 1100 }),
  fc.integer({ min: BIN_COUNT - 70, max: BIN_COUNT - 1 }),
);

function firstAtLeast(marked: Set<number>, from: number): number {
  let best = NIL;
  for (const bin of marked) if (bin >= from && (best === NIL || bin < best)) best = bin;
  return best;
}

function check(bitmap: BinBitmap, marked: Set<number>): void {
  const probes = new Set([0, 1, 31, 32, 1023, 1024, BIN_COUNT - 1, BIN_COUNT, BIN_COUNT + 5]);
  for (const bin of marked) {
    for (const p of [bin - 1, bin, bin + 1, bin & ~31, (bin | 31) + 1, (bin | 1023) + 1]) {
      if (p >= 0) probes.add(p);
    }
  }
  for (const p of probes) assert.equal(bitmap.next(p), firstAtLeast(marked, p), `next(${p})`);
  const highest = marked.size === 0 ? NIL : Math.max(...marked);
  assert.equal(bitmap.highest(), highest, 'highest');
  assert.equal(bitmap.empty, marked.size === 0, 'empty');
}

describe('BinBitmap', () => {
  it('finds the first marked bin at or above any bin, and the highest, as a set does', async () => {
    await assertYielding(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), anyBin), { maxLength: 120, size: 'max' }),
        (steps) => {
          const bitmap = new BinBitmap();
          const marked = new Set<number>();
          for (const [on, bin] of steps) {
            if (on) {
              bitmap.mark(bin);
              marked.add(bin);
            } else if (marked.has(bin)) {
              bitmap.unmark(bin);
              marked.delete(bin);
            }
            check(bitmap, marked);
          }
          bitmap.clear();
          check(bitmap, new Set());
        },
      ),
      runs,
    );
  });

  it('walks every marked bin in order, across all three levels', () => {
    const bitmap = new BinBitmap();
    const bins = [0, 31, 32, 1023, 1024, 1055, 4096, BIN_COUNT - 1];
    for (const bin of bins) bitmap.mark(bin);
    const seen: number[] = [];
    // Bounded, so a `next` that goes backwards fails here instead of looping.
    for (let b = bitmap.next(0); b !== NIL && seen.length <= bins.length; b = bitmap.next(b + 1)) {
      seen.push(b);
    }
    expect(seen).toEqual(bins);
    expect(bitmap.highest()).toBe(BIN_COUNT - 1);
  });
});
