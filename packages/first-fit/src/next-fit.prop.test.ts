/**
 * Next fit against a model: a sorted list of free ranges and a rover, searched from the rover in
 * address order, then from the start. The engine keeps the free block at the end of the range out
 * of its index; this checks that next fit still weighs it exactly where the model does.
 */
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { firstFit } from './first-fit';

const BASE = 2 ** 40;
const CAPACITY = 4096;
const GRANULE = 8;

/** FC_NUM_RUNS, FC_SEED and ALLOT_FUZZ apply, as in the conformance suite. */
const runs = propertyParameters({});

interface Range {
  address: number;
  size: number;
}

class NextFitModel {
  free: Range[] = [{ address: BASE, size: CAPACITY }];
  live = new Map<number, number>();
  rover = Number.NEGATIVE_INFINITY;

  allocate(size: number, alignment: number): number | null {
    const need = Math.ceil(size / GRANULE) * GRANULE;
    const fits = (r: Range) => {
      const pad = (alignment - (r.address % alignment)) % alignment;
      return pad + need <= r.size;
    };
    let chosen = this.free.find((r) => r.address >= this.rover && fits(r));
    chosen ??= this.free.find(fits);
    if (chosen === undefined) return null;
    const pad = (alignment - (chosen.address % alignment)) % alignment;
    const at = chosen.address + pad;
    const rest = chosen.size - pad - need;
    const replaced: Range[] = [];
    if (pad > 0) replaced.push({ address: chosen.address, size: pad });
    if (rest > 0) replaced.push({ address: at + need, size: rest });
    this.free.splice(this.free.indexOf(chosen), 1, ...replaced);
    this.live.set(at, need);
    this.rover = at + need;
    return at;
  }

  release(address: number): void {
    const size = this.live.get(address)!;
    this.live.delete(address);
    this.free.push({ address, size });
    this.free.sort((x, y) => x.address - y.address);
    const merged: Range[] = [];
    for (const r of this.free) {
      const last = merged.at(-1);
      if (last !== undefined && last.address + last.size === r.address) last.size += r.size;
      else merged.push({ ...r });
    }
    this.free = merged;
  }
}

describe('next fit', () => {
  it('places every block where the model does, the end of the range included', async () => {
    const op = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('alloc' as const),
          size: fc.integer({ min: 1, max: 700 }),
          alignment: fc.constantFrom(GRANULE, GRANULE, 64, 256),
        }),
      },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
    );
    await assertYielding(
      fc.property(fc.array(op, { maxLength: 120, size: 'max' }), (ops) => {
        const a = firstFit({ capacity: CAPACITY, base: BASE, nextFit: true });
        const model = new NextFitModel();
        for (const o of ops) {
          if (o.kind === 'alloc') {
            const alignment = o.alignment === GRANULE ? undefined : o.alignment;
            expect(a.allocate(o.size, alignment)).toBe(model.allocate(o.size, o.alignment));
          } else if (model.live.size > 0) {
            const address = [...model.live.keys()][o.pick % model.live.size]!;
            a.free(address);
            model.release(address);
          }
          const largest = Math.max(0, ...model.free.map((r) => r.size));
          expect(a.usage().largestFreeBlock).toBe(largest);
          expect(a.usage().freeBlockCount).toBe(model.free.length);
        }
      }),
      runs,
    );
  });
});
