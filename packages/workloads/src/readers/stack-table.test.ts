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

  it('keeps every stack when a full-size block of the pool is filled to its last id', () => {
    // Blocks of 2^14, 2^15, ... 2^20 ids: 64-frame stacks fill each exactly, the first 2^20 one at
    // 34,560 stacks; the next stack must start a new block, not the full one's first id again.
    const table = new StackTable();
    const frames = Array.from({ length: 256 }, (_, i) => table.frameRef('f.py', i, `f${i}`).id);
    // Stack k: its index in base 256 in the first three frames (so every stack differs), then 61
    // frames that vary with it.
    const ids = (k: number) => {
      const out = [frames[k % 256]!, frames[(k >> 8) % 256]!, frames[(k >> 16) % 256]!];
      for (let i = 3; i < 64; i++) out.push(frames[(k * 7 + i * (1 + (k % 13))) % 256]!);
      return out;
    };
    const count = 36_000;
    const stacks: number[] = [];
    for (let k = 0; k < count; k++) stacks.push(table.stackOfIds(ids(k)));
    expect(new Set(stacks).size).toBe(count);
    for (const k of [0, 34_559, 34_560, 34_561, count - 1]) {
      expect(table.framesOf(stacks[k]!).map((f) => f.line)).toEqual(ids(k));
    }
    // Asked again, each stack is found, not stored twice.
    for (const k of [0, 34_560, count - 1]) expect(table.stackOfIds(ids(k))).toBe(stacks[k]);
  });
});
