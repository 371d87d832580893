/**
 * Model-based check of the counters: random sequences of allocations, frees, scopes and resets
 * against a flat model (for `totals()`) and a per-scope model (for `scopeCounters()`).
 */
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tinyFirstFit } from '../test/support/tiny-first-fit';
import type { Counter, Counters } from './counters';
import { LiveTable } from './live-table';
import { withStats } from './with-stats';

type Quantity = keyof Counters;
const QUANTITIES: readonly Quantity[] = [
  'requestedBytes',
  'allocatedBytes',
  'allocations',
  'failures',
];

class ModelCounter implements Counter {
  current = 0;
  peak = 0;
  allocated = 0;
  freed = 0;
  add(delta: number): void {
    this.current += delta;
    if (delta > 0) this.allocated += delta;
    else this.freed -= delta;
    if (this.current > this.peak) this.peak = this.current;
  }
}

type ModelSet = Record<Quantity, ModelCounter>;
const newSet = (): ModelSet => ({
  requestedBytes: new ModelCounter(),
  allocatedBytes: new ModelCounter(),
  allocations: new ModelCounter(),
  failures: new ModelCounter(),
});

type Op =
  | { kind: 'alloc'; size: number; alignment: number | undefined }
  | { kind: 'free'; pick: number }
  | { kind: 'push' }
  | { kind: 'pop' }
  | { kind: 'resetPeak' }
  | { kind: 'resetAccumulated' };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('alloc' as const),
      size: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 3000 })),
      alignment: fc.constantFrom(undefined, 8, 64, 256),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'push' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'pop' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resetPeak' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resetAccumulated' as const }) },
);

function expectCounters(actual: Counters, model: ModelSet, label: string): void {
  for (const q of QUANTITIES) {
    const m = model[q];
    expect(actual[q], `${label}.${q}`).toEqual({
      current: m.current,
      peak: m.peak,
      allocated: m.allocated,
      freed: m.freed,
    });
  }
}

describe('withStats counters against a model', () => {
  it('totals and scope counters follow every operation', async () => {
    await assertYielding(
      fc.property(fc.array(op, { maxLength: 200, size: 'max' }), (ops) => {
        const upstream = tinyFirstFit({ capacity: 32 * 1024, base: 2 ** 40 });
        const stats = withStats(upstream);
        const global = newSet();
        const scopes: ModelSet[] = [];
        const live: { address: number; requested: number; usable: number }[] = [];
        const apply = (q: Quantity, delta: number) => {
          global[q].add(delta);
          for (const s of scopes) s[q].add(delta);
        };
        for (const o of ops) {
          switch (o.kind) {
            case 'alloc': {
              const address = stats.allocate(o.size, o.alignment);
              if (address === null) {
                apply('failures', 1);
              } else {
                const usable = upstream.usableSize(address);
                expect(usable).toBeGreaterThanOrEqual(o.size);
                live.push({ address, requested: o.size, usable });
                apply('requestedBytes', o.size);
                apply('allocatedBytes', usable);
                apply('allocations', 1);
              }
              break;
            }
            case 'free': {
              if (live.length === 0) break;
              const [block] = live.splice(o.pick % live.length, 1);
              stats.free(block!.address);
              apply('requestedBytes', -block!.requested);
              apply('allocatedBytes', -block!.usable);
              apply('allocations', -1);
              break;
            }
            case 'push':
              scopes.push(newSet());
              expect(stats.push()).toBe(scopes.length);
              break;
            case 'pop': {
              if (scopes.length === 0) {
                expect(() => stats.pop()).toThrow(RangeError);
                break;
              }
              const popped = stats.pop();
              expectCounters(popped, scopes.pop()!, 'popped');
              break;
            }
            case 'resetPeak':
              stats.resetPeak();
              for (const set of [global, ...scopes])
                for (const q of QUANTITIES) set[q].peak = set[q].current;
              break;
            case 'resetAccumulated':
              stats.resetAccumulated();
              for (const set of [global, ...scopes]) {
                for (const q of QUANTITIES) set[q].allocated = set[q].freed = 0;
              }
              break;
          }
          expectCounters(stats.totals(), global, 'totals');
          expectCounters(stats.scopeCounters(), scopes.at(-1) ?? global, 'scope');
          expect(stats.depth).toBe(scopes.length);
          const usage = upstream.usage();
          expect(stats.totals().allocatedBytes.current).toBe(usage.allocatedBytes);
          expect(stats.totals().allocations.current).toBe(usage.liveCount);
        }
        const histogram = stats.sizeHistogram();
        expect(histogram.count).toBe(global.allocations.allocated);
      }),
      propertyParameters({}),
    );
  });
});

describe('LiveTable against a Map', () => {
  it('finds, inserts and removes like a Map, through growth and wrap-around', async () => {
    const key = fc.oneof(
      fc.integer({ min: 0, max: 4096 }),
      fc.integer({ min: 0, max: 64 }).map((k) => 2 ** 32 + k * 4096),
      fc.integer({ min: 0, max: 64 }).map((k) => 2 ** 52 - k * 256),
    );
    await assertYielding(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), key, fc.nat({ max: 1000 })), {
          maxLength: 400,
          size: 'max',
        }),
        (ops) => {
          const table = new LiveTable(4);
          const model = new Map<number, number>();
          for (const [insert, address, size] of ops) {
            const slot = table.find(address);
            expect(slot >= 0).toBe(model.has(address));
            if (insert && slot < 0) {
              table.insert(address, size, size + 1);
              model.set(address, size);
            } else if (!insert && slot >= 0) {
              expect(table.requestedAt(slot)).toBe(model.get(address));
              expect(table.usableAt(slot)).toBe(model.get(address)! + 1);
              table.recycle(table.take(address));
              model.delete(address);
            }
            expect(table.size).toBe(model.size);
          }
          for (const [address, size] of model)
            expect(table.requestedAt(table.find(address))).toBe(size);
          const visited = new Map<number, number>();
          table.forEach((address, requested, usable) => {
            expect(usable).toBe(requested + 1);
            visited.set(address, requested);
          });
          expect(visited).toEqual(model);
          expect(table.take(-1)).toBe(-1);
          expect(table.size).toBe(model.size);
        },
      ),
      propertyParameters({}),
    );
  });
});
