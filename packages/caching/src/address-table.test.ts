import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressTable } from './address-table';

describe('AddressTable', () => {
  it('agrees with a Map under random sets and deletes (seeded)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.nat({ max: 4000 })), { maxLength: 3000 }),
        (ops) => {
          const table = new AddressTable();
          const model = new Map<number, number>();
          ops.forEach(([insert, unit], i) => {
            const address = 2 ** 40 + unit * 512 * 4096;
            if (insert && !model.has(address)) {
              table.set(address, i);
              model.set(address, i);
            } else {
              expect(table.delete(address)).toBe(model.get(address) ?? -1);
              model.delete(address);
            }
          });
          expect(table.size).toBe(model.size);
          for (const [address, slot] of model) expect(table.get(address)).toBe(slot);
          expect(table.get(Number.NaN)).toBe(-1);
          expect(table.get(-1)).toBe(-1);
        },
      ),
      { seed: 0x5eed, numRuns: 50 },
    );
  });
});
