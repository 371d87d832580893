import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressMap } from './address-map';
import { NIL } from './block-table';

// Runs: FC_NUM_RUNS (default 100, 1,000 under ALLOT_FUZZ=1); FC_SEED and FC_PATH replay a failure.
const runs = propertyParameters({});

// Addresses on a few strides (colliding low words included) below and above 2^32.
const address = fc
  .tuple(
    fc.constantFrom(0, 2 ** 32, 2 ** 40, 2 ** 48, 2 ** 52),
    fc.integer({ min: 0, max: 300 }),
    fc.constantFrom(1, 8, 4096, 2 ** 32),
  )
  .map(([base, k, stride]) => Math.min(base + k * stride, Number.MAX_SAFE_INTEGER));

describe('AddressMap', () => {
  it('agrees with Map', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), address, value: fc.nat({ max: 2 ** 30 }) }),
      fc.record({ kind: fc.constant('take' as const), address }),
      fc.record({ kind: fc.constant('takeLive' as const), pick: fc.nat() }),
    );
    await assertYielding(
      fc.property(fc.array(op, { maxLength: 400, size: 'max' }), (ops) => {
        const map = new AddressMap(8);
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.kind === 'set') {
            map.set(o.address, o.value);
            model.set(o.address, o.value);
          } else {
            const key =
              o.kind === 'take' ? o.address : [...model.keys()][o.pick % Math.max(1, model.size)];
            if (key === undefined) continue;
            expect(map.take(key)).toBe(model.get(key) ?? NIL);
            model.delete(key);
          }
          expect(map.size).toBe(model.size);
        }
        for (const [k, v] of model) expect(map.get(k)).toBe(v);
        expect(map.get(-1)).toBe(NIL);
        expect(map.get(Number.NaN)).toBe(NIL);
        map.clear();
        for (const k of model.keys()) expect(map.has(k)).toBe(false);
      }),
      runs,
    );
  });
});
