/**
 * The stack table: each distinct stack stored once and numbered as first used, its frame ids in
 * blocks of two bytes an id until there are over 65,536 distinct frames, then four.
 */
import { describe, expect, it } from 'vitest';
import { MAX_STACK_FRAMES, StackTable } from './stack-table';

function frames(table: StackTable, ids: readonly number[]) {
  return ids.map((id) => table.refs[id]!);
}

describe('the stack table', () => {
  it('keeps stacks of frame ids past 65,536 beside those before', () => {
    const table = new StackTable();
    for (let i = 0; i < 1000; i++) table.frameRef(`f${i % 10}.py`, i, `g${i % 7}`);
    const early = Array.from({ length: 40 }, (_, i) => (i * 37) % 1000);
    const a = table.stackOf(frames(table, early));
    expect(table.stackOf(frames(table, early))).toBe(a);
    for (let i = 1000; i < 70_000; i++) table.frameRef('big.py', i, 'h');
    const late = Array.from({ length: 50 }, (_, i) => 65_000 + i * 97);
    const b = table.stackOf(frames(table, late));
    // Many stacks, so that the pool takes several blocks of either width.
    const ids: number[] = [];
    for (let k = 0; k < 30_000; k++) {
      const stack = [k % 70_000, (k * 7919) % 70_000, 69_999 - (k % 5000)];
      ids.push(table.stackOf(frames(table, stack)));
    }
    expect(table.framesOf(a).map((f) => f.line)).toEqual(early);
    expect(table.framesOf(b).map((f) => f.line)).toEqual(late);
    expect(table.stackOf(frames(table, early))).toBe(a);
    expect(table.stackOf(frames(table, late))).toBe(b);
    for (let k = 0; k < 30_000; k += 1999) {
      expect(table.framesOf(ids[k]!).map((f) => f.line)).toEqual([
        k % 70_000,
        (k * 7919) % 70_000,
        69_999 - (k % 5000),
      ]);
    }
    expect(table.size).toBe(new Set([a, b, ...ids]).size + 1);
  });

  it('numbers stacks as they are first used, not as they are first seen', () => {
    const table = new StackTable();
    for (let i = 0; i < 4; i++) table.frameRef('a.py', i, 'f');
    const seen = Int32Array.of(3, 2);
    const run = table.run(seen, 2);
    expect(table.size).toBe(1);
    const used = table.stackOf(frames(table, [0, 1]));
    expect(used).toBe(1);
    expect(table.use(run)).toBe(2);
    expect(table.stackOfIds([3, 2])).toBe(2);
    expect(table.stackOfIds([])).toBe(0);
    const long = Array.from({ length: 100 }, (_, i) => i % 4);
    expect(table.framesOf(table.stackOfIds(long))).toHaveLength(MAX_STACK_FRAMES);
  });
});
