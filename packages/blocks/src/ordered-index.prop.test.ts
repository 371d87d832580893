import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NIL } from './block-table';
import { OrderedIndex } from './ordered-index';
import { OrderedTree } from './ordered-tree';

/** Both ordered structures share one interface; the model checks each. */
type Ordered = OrderedIndex | OrderedTree;

// Runs: FC_NUM_RUNS (default 100, 1,000 under ALLOT_FUZZ=1); FC_SEED and FC_PATH replay a failure.
const runs = propertyParameters({});

interface Entry {
  id: number;
  primary: number;
  secondary: number;
  value: number;
}

const before = (a: Entry, b: Entry) =>
  a.primary < b.primary || (a.primary === b.primary && a.secondary < b.secondary);

/** The array model: entries sorted by key. */
function sorted(model: Map<number, Entry>): Entry[] {
  return [...model.values()].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
}

// Keys from a small range so that ties in the primary key happen; some keys above 2^32.
const key = fc.oneof(
  fc.integer({ min: 0, max: 40 }),
  fc.integer({ min: 0, max: 40 }).map((k) => 2 ** 40 + k),
  fc.integer({ min: 0, max: 40 }).map((k) => 2 ** 52 + k),
);
const op = fc.oneof(
  fc.record({
    kind: fc.constant('insert' as const),
    primary: key,
    secondary: fc.integer({ min: 0, max: 5 }),
    value: fc.integer({ min: 1, max: 2 ** 20 }),
  }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant('rekey' as const),
    pick: fc.nat(),
    // OrderedTree: take the rekeyLocal path (remove and insert when it declines).
    local: fc.boolean(),
    primary: key,
    secondary: fc.integer({ min: 0, max: 5 }),
    value: fc.integer({ min: 1, max: 2 ** 20 }),
  }),
  fc.record({
    kind: fc.constant('value' as const),
    pick: fc.nat(),
    value: fc.integer({ min: 1, max: 2 ** 48 }),
  }),
  // Primary keys downward from one: each new id goes first in its leaf, so the smallest key of the
  // leaf's ancestors changes, up to where the leaf is not the first child.
  fc.record({
    kind: fc.constant('descending' as const),
    primary: key,
    count: fc.integer({ min: 2, max: 12 }),
    value: fc.integer({ min: 1, max: 2 ** 20 }),
  }),
  // An in-place update that moves the key strictly between its neighbours' (as a free block that
  // shrinks from its front does), or keeps it, with a new value.
  fc.record({
    kind: fc.constant('nudge' as const),
    pick: fc.nat(),
    to: fc.nat(),
    value: fc.integer({ min: 1, max: 2 ** 48 }),
  }),
  // Emptied mid-run: the ids are used again, as the block table does.
  fc.constant({ kind: 'clear' as const }),
);

function check(index: Ordered, model: Map<number, Entry>, probes: readonly number[]): void {
  const order = sorted(model);
  expect(index.count).toBe(order.length);
  // In-order walk by successor and predecessor.
  const walk: number[] = [];
  for (let x = index.first(); x !== NIL; x = index.successor(x)) walk.push(x);
  expect(walk).toEqual(order.map((e) => e.id));
  const back: number[] = [];
  for (let x = index.last(); x !== NIL; x = index.predecessor(x)) back.push(x);
  expect(back).toEqual(order.map((e) => e.id).reverse());
  // The searches come before maxValue(): a maxValue() that repaired the maxima on its way down
  // would otherwise hide from them a maximum left too high by a value that shrank or left.
  for (const p of probes) {
    const probeKey = order.length > 0 ? order[p % order.length]!.primary + (p % 3) - 1 : p;
    const lower = order.find((e) => e.primary >= probeKey);
    expect(index.lowerBound(probeKey, Number.NEGATIVE_INFINITY)).toBe(lower?.id ?? NIL);
    if (!index.augmented) continue;
    // One need anywhere, and one next to a value present (just above, at or just below it).
    const near = order.length > 0 ? order[(p >> 2) % order.length]!.value + (p % 3) - 1 : p;
    for (const need of [1 + (p % 2 ** 20), Math.max(1, near)]) {
      const fromStart = order.find((e) => e.value >= need);
      expect(index.firstAtLeast(Number.NEGATIVE_INFINITY, need)).toBe(fromStart?.id ?? NIL);
      const from = order.find((e) => e.primary >= probeKey && e.value >= need);
      expect(index.firstAtLeast(probeKey, need)).toBe(from?.id ?? NIL);
      if (from) {
        const at = order.indexOf(from);
        const next = order.slice(at + 1).find((e) => e.value >= need);
        expect(index.nextAtLeast(from.id, need)).toBe(next?.id ?? NIL);
      }
    }
  }
  const maxValue = order.reduce((m, e) => Math.max(m, e.value), 0);
  if (index.augmented) expect(index.maxValue()).toBe(maxValue);
  else expect(index.maxValue()).toBe(order.at(-1)?.value ?? 0);
}

const structures: [string, number, (augmented: boolean) => Ordered][] = [
  ['OrderedIndex', 120, (augmented) => new OrderedIndex({ augmented, initialIds: 4 })],
  // Narrow nodes and long runs: splits, merges and root changes happen often.
  [
    'OrderedTree (width 4)',
    400,
    (augmented) => new OrderedTree({ augmented, initialIds: 4, width: 4 }),
  ],
  ['OrderedTree (width 32)', 400, (augmented) => new OrderedTree({ augmented, initialIds: 4 })],
];

describe.each(structures)('%s', (_name, maxLength, make) => {
  it.each([false, true])('agrees with a sorted-array model (augmented: %s)', async (augmented) => {
    await assertYielding(
      fc.property(
        // Up to 100 operations ('medium'). At fast-check's default size an array holds at most 10
        // whatever its maxLength: too few for a tree of width 4 to grow a level and shrink again,
        // or for the largest value under an internal entry to shrink or leave.
        fc.array(op, { maxLength, size: 'medium' }),
        fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
        (ops, probes) => {
          const index = make(augmented);
          const model = new Map<number, Entry>();
          const freeIds: number[] = [];
          let nextId = 0;
          // Keys are unique by contract (every caller keys by address, or by size then address):
          // an operation that would give a second id the same key is skipped.
          const taken = (primary: number, secondary: number, self?: number) =>
            [...model.values()].some(
              (e) => e.id !== self && e.primary === primary && e.secondary === secondary,
            );
          const insert = (primary: number, secondary: number, value: number) => {
            if (taken(primary, secondary)) return;
            const e = { id: freeIds.pop() ?? nextId++, primary, secondary, value };
            index.insert(e.id, e.primary, e.secondary, e.value);
            model.set(e.id, e);
          };
          for (const o of ops) {
            const ids = [...model.keys()];
            if (o.kind === 'insert') {
              insert(o.primary, o.secondary, o.value);
            } else if (o.kind === 'descending') {
              for (let i = 0; i < o.count; i++) insert(o.primary - i, 0, o.value + i);
            } else if (o.kind === 'clear') {
              index.clear();
              for (const id of ids) expect(index.has(id)).toBe(false);
              freeIds.push(...ids);
              model.clear();
            } else if (ids.length === 0) {
              continue;
            } else if (o.kind === 'remove') {
              const id = ids[o.pick % ids.length]!;
              index.remove(id);
              model.delete(id);
              freeIds.push(id);
              expect(index.has(id)).toBe(false);
            } else if (o.kind === 'rekey') {
              const id = ids[o.pick % ids.length]!;
              if (taken(o.primary, o.secondary, id)) continue;
              if (index instanceof OrderedTree && o.local) {
                if (!index.rekeyLocal(id, o.primary, o.secondary, o.value)) {
                  index.remove(id);
                  index.insert(id, o.primary, o.secondary, o.value);
                }
              } else {
                index.rekey(id, o.primary, o.secondary, o.value);
              }
              model.set(id, { id, primary: o.primary, secondary: o.secondary, value: o.value });
            } else if (o.kind === 'nudge') {
              const order = sorted(model);
              const at = o.pick % order.length;
              const e = order[at]!;
              // Primary keys strictly between the neighbours' keep the order; the secondary stays.
              const low = at > 0 ? order[at - 1]!.primary + 1 : e.primary - 8;
              const high = at + 1 < order.length ? order[at + 1]!.primary - 1 : e.primary + 8;
              if (high < low) continue;
              const primary = low + (o.to % (high - low + 1));
              if (taken(primary, e.secondary, e.id)) continue;
              index.updateInPlace(e.id, primary, e.secondary, o.value);
              model.set(e.id, { ...e, primary, value: o.value });
            } else {
              // A value change keeps the key: always an in-place update.
              const id = ids[o.pick % ids.length]!;
              const e = model.get(id)!;
              index.updateInPlace(id, e.primary, e.secondary, o.value);
              model.set(id, { ...e, value: o.value });
            }
            check(index, model, probes);
          }
          index.clear();
          expect(index.count).toBe(0);
          expect(index.first()).toBe(NIL);
        },
      ),
      runs,
    );
  });
});
