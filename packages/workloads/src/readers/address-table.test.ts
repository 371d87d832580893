import { assertYielding } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressTable } from './address-table';

describe('AddressTable', () => {
  it('agrees with a Map through sets, gets and deletes, growth and collisions included', async () => {
    // Addresses as a GPU hands them out: large, sharing their low bits, drawn from a small set so
    // that the same ones come back and probe runs form and break.
    const address = fc
      .integer({ min: 0, max: 300 })
      .map((k) => 0x7f00_0000_0000 + k * 512 + (k % 7) * 2 ** 34);
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), address, value: fc.nat() }),
      fc.record({ kind: fc.constant('delete' as const), address }),
    );
    await assertYielding(
      fc.property(fc.array(op, { maxLength: 600 }), (ops) => {
        const table = new AddressTable(4);
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.kind === 'set') {
            table.set(o.address, o.value);
            model.set(o.address, o.value);
          } else {
            expect(table.delete(o.address)).toBe(model.delete(o.address));
          }
          expect(table.size).toBe(model.size);
        }
        for (let k = 0; k <= 300; k++) {
          const a = 0x7f00_0000_0000 + k * 512 + (k % 7) * 2 ** 34;
          expect(table.get(a)).toBe(model.get(a) ?? -1);
          expect(table.has(a)).toBe(model.has(a));
        }
      }),
      { seed: 7, numRuns: 200 },
    );
  });
});
