import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NIL } from './block-table';
import { OrderedIndex } from './ordered-index';

const runs = {
  seed: Number(process.env.FC_SEED ?? 0x0dde),
  numRuns: Number(process.env.FC_NUM_RUNS ?? 100),
};

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
    primary: key,
    secondary: fc.integer({ min: 0, max: 5 }),
    value: fc.integer({ min: 1, max: 2 ** 20 }),
  }),
  fc.record({
    kind: fc.constant('value' as const),
    pick: fc.nat(),
    value: fc.integer({ min: 1, max: 2 ** 48 }),
  }),
);

function check(index: OrderedIndex, model: Map<number, Entry>, probes: readonly number[]): void {
  const order = sorted(model);
  expect(index.count).toBe(order.length);
  // In-order walk by successor and predecessor.
  const walk: number[] = [];
  for (let x = index.first(); x !== NIL; x = index.successor(x)) walk.push(x);
  expect(walk).toEqual(order.map((e) => e.id));
  const back: number[] = [];
  for (let x = index.last(); x !== NIL; x = index.predecessor(x)) back.push(x);
  expect(back).toEqual(order.map((e) => e.id).reverse());
  const maxValue = order.reduce((m, e) => Math.max(m, e.value), 0);
  if (index.augmented) expect(index.maxValue()).toBe(maxValue);
  else expect(index.maxValue()).toBe(order.at(-1)?.value ?? 0);
  for (const p of probes) {
    const probeKey = order.length > 0 ? order[p % order.length]!.primary + (p % 3) - 1 : p;
    const lower = order.find((e) => e.primary >= probeKey);
    expect(index.lowerBound(probeKey, Number.NEGATIVE_INFINITY)).toBe(lower?.id ?? NIL);
    if (index.augmented) {
      const need = 1 + (p % 2 ** 20);
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
}

describe.each([false, true])('OrderedIndex (augmented: %s)', (augmented) => {
  it('agrees with a sorted-array model', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 120 }),
        fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
        (ops, probes) => {
          const index = new OrderedIndex({ augmented, initialIds: 4 });
          const model = new Map<number, Entry>();
          let nextId = 0;
          for (const o of ops) {
            const ids = [...model.keys()];
            if (o.kind === 'insert') {
              const e = {
                id: nextId++,
                primary: o.primary,
                secondary: o.secondary,
                value: o.value,
              };
              index.insert(e.id, e.primary, e.secondary, e.value);
              model.set(e.id, e);
            } else if (ids.length === 0) {
              continue;
            } else if (o.kind === 'remove') {
              const id = ids[o.pick % ids.length]!;
              index.remove(id);
              model.delete(id);
              expect(index.has(id)).toBe(false);
            } else if (o.kind === 'rekey') {
              const id = ids[o.pick % ids.length]!;
              index.rekey(id, o.primary, o.secondary, o.value);
              model.set(id, { id, primary: o.primary, secondary: o.secondary, value: o.value });
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
