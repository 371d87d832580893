/**
 * SparseIdIndex answers exactly as an OrderedIndex over the same ids would, whatever the ids.
 * Runs: FC_NUM_RUNS (default 100); FC_SEED and FC_PATH replay a failure.
 */
import { NIL, OrderedIndex } from '@allot/blocks';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SparseIdIndex } from './sparse-index';

const parameters: fc.Parameters<unknown> = {
  numRuns: Number(process.env.FC_NUM_RUNS ?? 100),
  ...(process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) }),
  ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
};

function order(index: OrderedIndex): number[] {
  const ids: number[] = [];
  for (let id = index.first(); id !== NIL; id = index.successor(id)) ids.push(id);
  return ids;
}

describe('SparseIdIndex', () => {
  it('matches OrderedIndex on inserts, removes and searches over sparse ids', () => {
    const op = fc.record({
      id: fc.integer({ min: 0, max: 5000 }),
      size: fc.integer({ min: 1, max: 64 }),
      search: fc.integer({ min: 0, max: 70 }),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const plain = new OrderedIndex();
        const sparse = new SparseIdIndex();
        for (const { id, size, search } of ops) {
          if (plain.has(id)) {
            plain.remove(id);
            sparse.remove(id);
          } else {
            plain.insert(id, size, id, size);
            sparse.insert(id, size, id, size);
          }
          expect(sparse.has(id)).toBe(plain.has(id));
          expect(sparse.count).toBe(plain.count);
          expect(sparse.lowerBound(search, 0)).toBe(plain.lowerBound(search, 0));
          expect(sparse.last()).toBe(plain.last());
          const last = plain.last();
          if (last !== NIL) {
            expect(sparse.predecessor(last)).toBe(plain.predecessor(last));
            expect(sparse.primary(last)).toBe(plain.primary(last));
          }
        }
        expect(order(sparse)).toEqual(order(plain));
        sparse.clear();
        expect(sparse.first()).toBe(NIL);
      }),
      parameters,
    );
  });
});
