import { describe, expect, it } from 'vitest';
import { BlockState, BlockTable, NIL } from './block-table';

function addresses(t: BlockTable): number[] {
  const out: number[] = [];
  for (let b = t.head; b !== NIL; b = t.next[b]!) out.push(t.address[b]!);
  return out;
}

describe('BlockTable', () => {
  it('keeps address order through inserts and unlinks, and reuses slots', () => {
    const t = new BlockTable(4);
    const a = t.reset(2 ** 40, 100, BlockState.Free);
    const b = t.insertAfter(a, 2 ** 40 + 100, 50, BlockState.Live);
    const c = t.insertBefore(a, 2 ** 40 - 10, 10, BlockState.Live);
    expect(addresses(t)).toEqual([2 ** 40 - 10, 2 ** 40, 2 ** 40 + 100]);
    expect(t.head).toBe(c);
    expect(t.tail).toBe(b);
    t.unlink(a);
    expect(addresses(t)).toEqual([2 ** 40 - 10, 2 ** 40 + 100]);
    expect(t.prev[b]).toBe(c);
    expect(t.state[a]).toBe(BlockState.Unused);
    const d = t.insertAfter(c, 2 ** 40, 5, BlockState.Free);
    expect(d).toBe(a);
    expect(t.containing(2 ** 40 + 120)).toBe(b);
    expect(t.containing(2 ** 40 + 7)).toBe(NIL);
  });

  it('doubles its arrays and keeps their contents', () => {
    const t = new BlockTable(4);
    let last = t.reset(0, 8, BlockState.Live);
    for (let i = 1; i < 1000; i++) last = t.insertAfter(last, i * 8, 8, BlockState.Live);
    expect(t.count).toBe(1000);
    expect(t.slots).toBeGreaterThanOrEqual(1000);
    expect(addresses(t)).toEqual(Array.from({ length: 1000 }, (_, i) => i * 8));
    t.clear();
    expect(t.count).toBe(0);
    expect(t.head).toBe(NIL);
  });
});
