/**
 * The address tree against a model: a list of (block, address, size) sorted by address, searched
 * by a walk. Narrow nodes (4 entries) and long runs make splits, merges, root changes and the
 * upkeep of each node's largest size happen often.
 */
import { NIL } from '@allot/blocks';
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressTree } from './address-tree';

/** FC_NUM_RUNS, FC_SEED and ALLOT_FUZZ apply, as in the conformance suite. */
const runs = propertyParameters({});

interface Entry {
  id: number;
  address: number;
  size: number;
}

// Addresses from a small range so that neighbours sit close (an update may have no room to move);
// some above 2^32 and near 2^52, where only doubles hold them exactly.
const address = fc.oneof(
  fc.integer({ min: 0, max: 60 }),
  fc.integer({ min: 0, max: 60 }).map((k) => 2 ** 40 + k),
  fc.integer({ min: 0, max: 60 }).map((k) => 2 ** 52 + k),
);
const size = fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 2 ** 48 }));
const op = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('insert' as const), address, size }), weight: 4 },
  {
    // Addresses downward from one: each new block goes first in its leaf, so the smallest key of
    // the leaf's ancestors changes, up to where the leaf is not the first child.
    arbitrary: fc.record({
      kind: fc.constant('descending' as const),
      address,
      count: fc.integer({ min: 2, max: 12 }),
      size,
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }), weight: 3 },
  {
    // Moves the block anywhere between its neighbours (or keeps its address) and resizes it.
    arbitrary: fc.record({
      kind: fc.constant('update' as const),
      pick: fc.nat(),
      to: fc.nat(),
      size,
    }),
    weight: 4,
  },
  { arbitrary: fc.constant({ kind: 'clear' as const }), weight: 1 },
);

function check(tree: AddressTree, order: readonly Entry[], probes: readonly number[]): void {
  expect(tree.count).toBe(order.length);
  expect(tree.largest()).toBe(order.reduce((m, e) => Math.max(m, e.size), 0));
  for (const e of order) {
    expect(tree.has(e.id)).toBe(true);
    expect(tree.addressOf(e.id)).toBe(e.address);
  }
  // Every block in address order: each size is at least 1.
  const walk: number[] = [];
  for (let id = tree.first(1); id !== NIL; id = tree.nextAfter(id, 1)) walk.push(id);
  expect(walk).toEqual(order.map((e) => e.id));
  for (const p of probes) {
    // One need anywhere, and one next to a size present (just above, at or just below it).
    const near = order.length > 0 ? order[p % order.length]!.size + (p % 3) - 1 : p;
    const from = order.length > 0 ? order[(p >> 2) % order.length]!.address + (p % 3) - 1 : p;
    for (const need of [1 + (p % 64), Math.max(1, near)]) {
      const first = order.find((e) => e.size >= need);
      expect(tree.first(need)).toBe(first?.id ?? NIL);
      const above = order.find((e) => e.address >= from && e.size >= need);
      expect(tree.firstFrom(from, need)).toBe(above?.id ?? NIL);
      expect(tree.firstFrom(Number.NEGATIVE_INFINITY, need)).toBe(first?.id ?? NIL);
      if (above) {
        const next = order.slice(order.indexOf(above) + 1).find((e) => e.size >= need);
        expect(tree.nextAfter(above.id, need)).toBe(next?.id ?? NIL);
      }
    }
  }
}

describe.each([
  ['4 entries a node', 2],
  ['32 entries a node', 5],
])('AddressTree (%s)', (_name, shift) => {
  it('agrees with a sorted list', async () => {
    await assertYielding(
      fc.property(
        // Up to 400 operations ('medium' size): enough for a tree of width 4 to grow three levels
        // and shrink again.
        fc.array(op, { maxLength: 400, size: 'medium' }),
        fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
        (ops, probes) => {
          const tree = new AddressTree(shift);
          let order: Entry[] = [];
          // Blocks are slots: a freed id is used again first, as the block table does.
          const freeIds: number[] = [];
          let nextId = 0;
          const insert = (at: number, bytes: number) => {
            if (order.some((e) => e.address === at)) return;
            const id = freeIds.pop() ?? nextId++;
            tree.insert(id, at, bytes);
            order.push({ id, address: at, size: bytes });
            order.sort((a, b) => a.address - b.address);
          };
          for (const o of ops) {
            if (o.kind === 'insert') {
              insert(o.address, o.size);
            } else if (o.kind === 'descending') {
              for (let i = 0; i < o.count; i++) insert(o.address - i, o.size + i);
            } else if (o.kind === 'clear') {
              tree.clear();
              for (const e of order) expect(tree.has(e.id)).toBe(false);
              freeIds.push(...order.map((e) => e.id));
              order = [];
            } else if (order.length === 0) {
              continue;
            } else if (o.kind === 'remove') {
              const [e] = order.splice(o.pick % order.length, 1);
              tree.remove(e!.id);
              expect(tree.has(e!.id)).toBe(false);
              freeIds.push(e!.id);
            } else {
              const at = o.pick % order.length;
              const e = order[at]!;
              // Strictly between the neighbours' addresses: the order stays as it was.
              const low = at > 0 ? order[at - 1]!.address + 1 : e.address - 8;
              const high = at + 1 < order.length ? order[at + 1]!.address - 1 : e.address + 8;
              e.address = low + (o.to % (high - low + 1));
              e.size = o.size;
              tree.update(e.id, e.address, e.size);
            }
            check(tree, order, probes);
          }
        },
      ),
      runs,
    );
  });
});
