/**
 * The bins' heaps against a map of bins to keyed ids: after every push, pull and clear, each bin's
 * top is its id of lowest key, its size and every id's bin agree with the map, and the bitmap marks
 * exactly the non-empty bins. Runs of pushes into one bin move its segment again and again and fill
 * the pool, so segments move and the pool is repacked under the check.
 */
import assert from 'node:assert/strict';
import { NIL } from '@allot/blocks';
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BIN_COUNT } from './bin-bitmap';
import { BinHeaps } from './bin-heaps';

/** FC_NUM_RUNS, FC_SEED and ALLOT_FUZZ apply, as in the conformance suite. */
const runs = propertyParameters({});

const IDS = 700;

/** A step: push the next free id into a bin (a run of `times`), pull a filed id, or clear. */
const step = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('push' as const),
      bin: fc.oneof(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: BIN_COUNT - 1 })),
      times: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 300 })),
      key: fc.integer({ min: 0, max: 2 ** 40 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('pull' as const),
      pick: fc.nat(),
      times: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 200 })),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
);

/** Model: per filed id, its bin and key. */
type Model = Map<number, { bin: number; key: number }>;

function check(heaps: BinHeaps, model: Model): void {
  const bins = new Map<number, { id: number; key: number }[]>();
  for (const [id, { bin, key }] of model) {
    const list = bins.get(bin) ?? [];
    list.push({ id, key });
    bins.set(bin, list);
  }
  for (const [bin, list] of bins) {
    assert.equal(heaps.size(bin), list.length, `size of bin ${bin}`);
    const lowest = list.reduce((a, b) =>
      b.key < a.key || (b.key === a.key && b.id < a.id) ? b : a,
    );
    assert.equal(heaps.keyAt(bin, 0), lowest.key, `top key of bin ${bin}`);
    const entries = new Set<number>();
    for (let i = 0; i < heaps.size(bin); i++) entries.add(heaps.idAt(bin, i));
    assert.deepEqual(entries, new Set(list.map((e) => e.id)), `ids of bin ${bin}`);
    assert.equal(model.get(heaps.top(bin))!.key, lowest.key, `top of bin ${bin}`);
  }
  for (let id = 0; id < IDS; id++) {
    assert.equal(heaps.binOfId(id), model.get(id)?.bin ?? NIL, `bin of id ${id}`);
  }
  const marked: number[] = [];
  for (let s = heaps.nonEmpty.next(0); s !== NIL; s = heaps.nonEmpty.next(s + 1)) marked.push(s);
  assert.deepEqual(
    marked,
    [...bins.keys()].sort((a, b) => a - b),
    'non-empty bins',
  );
}

describe('BinHeaps', () => {
  it('keep each bin’s lowest key on top through moves, repacks and clears, as a map does', async () => {
    await assertYielding(
      fc.property(fc.array(step, { maxLength: 40, size: 'max' }), (steps) => {
        const heaps = new BinHeaps(BIN_COUNT);
        const model: Model = new Map();
        const free: number[] = [];
        for (let id = IDS - 1; id >= 0; id--) free.push(id);
        for (const s of steps) {
          if (s.kind === 'clear') {
            heaps.clear();
            for (const id of model.keys()) free.push(id);
            model.clear();
          } else if (s.kind === 'push') {
            // Keys spread from the drawn one, some equal, so ties and both sift directions occur.
            for (let i = 0; i < s.times && free.length > 0; i++) {
              const id = free.pop()!;
              const key = s.key + ((i * 7919) % 257) * 8;
              heaps.push(s.bin, id, key);
              model.set(id, { bin: s.bin, key });
            }
          } else {
            for (let i = 0; i < s.times && model.size > 0; i++) {
              const ids = [...model.keys()];
              const id = ids[(s.pick + i * 31) % ids.length]!;
              heaps.pull(id, model.get(id)!.bin);
              model.delete(id);
              free.push(id);
            }
          }
          check(heaps, model);
        }
      }),
      runs,
    );
  });

  it('take the lowest key of a bin out first, one after another', () => {
    const heaps = new BinHeaps(BIN_COUNT);
    const keys = [50, 10, 40, 30, 20, 60, 0, 70];
    for (const [id, key] of keys.entries()) heaps.push(3, id, key);
    const order: number[] = [];
    while (heaps.size(3) > 0) {
      const id = heaps.top(3);
      order.push(keys[id]!);
      heaps.pull(id, 3);
    }
    expect(order).toEqual([0, 10, 20, 30, 40, 50, 60, 70]);
    expect(heaps.nonEmpty.empty).toBe(true);
  });
});
