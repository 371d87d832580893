/**
 * SparseIdIndex answers exactly as an OrderedIndex over the same ids would, whatever the ids.
 * Runs: FC_NUM_RUNS (default 100, 1,000 under ALLOT_FUZZ=1); FC_SEED and FC_PATH replay a failure.
 */
import assert from 'node:assert/strict';
import { NIL, OrderedIndex } from '@allot/blocks';
import { assertYielding, propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SparseIdIndex } from './sparse-index';

const parameters = propertyParameters({});

function order(index: OrderedIndex): number[] {
  const ids: number[] = [];
  for (let id = index.first(); id !== NIL; id = index.successor(id)) ids.push(id);
  return ids;
}

describe('SparseIdIndex', () => {
  it('matches OrderedIndex on inserts, removes and searches over sparse ids', async () => {
    const op = fc.record({
      id: fc.integer({ min: 0, max: 5000 }),
      size: fc.integer({ min: 1, max: 64 }),
      search: fc.integer({ min: 0, max: 70 }),
    });
    await assertYielding(
      fc.property(fc.array(op, { maxLength: 200, size: 'max' }), (ops) => {
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
          // node:assert inside the loop: vitest's expect costs microseconds a call.
          assert.equal(sparse.has(id), plain.has(id));
          assert.equal(sparse.count, plain.count);
          assert.equal(sparse.lowerBound(search, 0), plain.lowerBound(search, 0));
          assert.equal(sparse.last(), plain.last());
          const last = plain.last();
          if (last !== NIL) {
            assert.equal(sparse.predecessor(last), plain.predecessor(last));
            assert.equal(sparse.primary(last), plain.primary(last));
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
