import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NIL } from './block-table';
import {
  CLASS_COUNT,
  classMinimum,
  floorLog2,
  SECOND_LEVEL_COUNT,
  SegregatedLists,
  sizeClass,
} from './segregated-lists';

// Runs: FC_NUM_RUNS (default 100, 1,000 under ALLOT_FUZZ=1); FC_SEED and FC_PATH replay a failure.
const runs = propertyParameters({});

const anySize = fc.oneof(
  fc.integer({ min: 1, max: 4096 }),
  fc.integer({ min: 1, max: 2 ** 32 + 2 ** 20 }),
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
);

describe('size classes', () => {
  it('floorLog2 is exact around every power of two up to 2^52', () => {
    for (let e = 0; e <= 52; e++) {
      expect(floorLog2(2 ** e)).toBe(e);
      if (e > 0) expect(floorLog2(2 ** e - 1)).toBe(e - 1);
      if (e > 0 && e < 52) expect(floorLog2(2 ** e + 1)).toBe(e);
    }
    expect(floorLog2(Number.MAX_SAFE_INTEGER)).toBe(52);
  });

  it('every size lies in its class, and classes are ordered', async () => {
    await assertYielding(
      fc.property(anySize, anySize, (a, b) => {
        const c = sizeClass(a);
        expect(c).toBeGreaterThanOrEqual(0);
        expect(c).toBeLessThan(CLASS_COUNT);
        expect(classMinimum(c)).toBeLessThanOrEqual(a);
        if (c + 1 < CLASS_COUNT) expect(classMinimum(c + 1)).toBeGreaterThan(a);
        // Bounded waste: a class spans at most 1/32 of its sizes.
        if (a >= SECOND_LEVEL_COUNT && c + 1 < CLASS_COUNT) {
          expect(classMinimum(c + 1) - classMinimum(c)).toBeLessThanOrEqual(a / SECOND_LEVEL_COUNT);
        }
        if (a <= b) expect(sizeClass(a)).toBeLessThanOrEqual(sizeClass(b));
      }),
      runs,
    );
  });
});

describe('SegregatedLists', () => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('insert' as const), size: anySize }),
    fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('refile' as const), pick: fc.nat(), size: anySize }),
    // Settling by a nearby size exercises the slack (the class just above is kept).
    fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      size: anySize,
      near: fc.boolean(),
    }),
  );

  it('agrees with an array model', async () => {
    await assertYielding(
      fc.property(
        fc.array(op, { maxLength: 100, size: 'max' }),
        fc.array(anySize, { minLength: 3, maxLength: 3 }),
        (ops, probes) => {
          const lists = new SegregatedLists(4);
          // id → the class it is filed under.
          const model = new Map<number, number>();
          let nextId = 0;
          for (const o of ops) {
            if (o.kind === 'insert') {
              lists.insert(nextId, o.size);
              model.set(nextId++, sizeClass(o.size));
            } else if (model.size > 0) {
              const id = [...model.keys()][o.pick % model.size]!;
              if (o.kind === 'remove') {
                lists.remove(id);
                model.delete(id);
                expect(lists.classOfId(id)).toBe(NIL);
              } else if (o.kind === 'refile') {
                const moved = lists.refile(id, o.size);
                expect(moved).toBe(model.get(id) !== sizeClass(o.size));
                model.set(id, sizeClass(o.size));
              } else {
                const filed = model.get(id)!;
                // A size just below the filed class's minimum: the slack keeps it.
                const size = o.near && filed > 0 ? Math.max(1, classMinimum(filed) - 1) : o.size;
                const c = sizeClass(size);
                const kept = c === filed || c + 1 === filed;
                expect(lists.settle(id, size)).toBe(!kept);
                if (!kept) model.set(id, c);
              }
              expect(lists.classOfId(id)).toBe(model.get(id) ?? NIL);
            }
            expect(lists.count).toBe(model.size);
            const classes = new Set(model.values());
            const ordered = [...classes].sort((x, y) => x - y);
            expect(lists.lastClass()).toBe(ordered.at(-1) ?? NIL);
            // Random probes, and probes at and next to the smallest size of a class present,
            // where a search decides between that class and the next.
            const near = ordered.flatMap((c) => [-1, 0, 1].map((d) => classMinimum(c) + d));
            for (const probe of [...probes, ...near]) {
              if (probe < 1) continue;
              const holding = ordered.find((c) => classMinimum(c) >= probe);
              expect(lists.firstClassHolding(probe)).toBe(holding ?? NIL);
              const from = sizeClass(probe);
              expect(lists.firstClassFrom(from)).toBe(ordered.find((c) => c >= from) ?? NIL);
            }
            // Every id is listed under its class, once.
            for (const c of ordered) {
              const listed: number[] = [];
              for (let id = lists.head(c); id !== NIL; id = lists.next(id)) listed.push(id);
              const expected = [...model].filter(([, filed]) => filed === c).map(([id]) => id);
              expect(listed.sort((x, y) => x - y)).toEqual(expected.sort((x, y) => x - y));
            }
          }
          lists.clear();
          expect(lists.lastClass()).toBe(NIL);
        },
      ),
      runs,
    );
  });
});
