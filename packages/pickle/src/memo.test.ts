/**
 * The streamed pickle's memo: every kind of slot gives back what was stored, short strings kept
 * once whatever the slots that hold them, and a slot stored again moves the version that caches of
 * slots' values check.
 */
import { describe, expect, it } from 'vitest';
import { FORGOTTEN, Memo } from './memo';

describe('the memo of a streamed pickle', () => {
  it('gives back each slot as stored: short and long strings, objects, refs, consumed', () => {
    const memo = new Memo((id) => `ref ${id}`, ['action']);
    const long = 'x'.repeat(100);
    const object = { a: 1 };
    for (let i = 0; i < 1000; i++) memo.put(3 * i, i % 2 === 0 ? 'N/A' : `s${i % 7}`);
    memo.put(3001, long);
    memo.put(3002, object);
    memo.put(3003, 'action');
    memo.putRef(3004, 21);
    memo.put(3005, 'gone');
    memo.forget(3005);
    expect(memo.get(0)).toBe('N/A');
    expect(memo.get(3)).toBe('s1');
    expect(memo.get(2997)).toBe('s5');
    expect(memo.get(1)).toBeUndefined();
    expect(memo.get(3001)).toBe(long);
    expect(memo.get(3002)).toBe(object);
    expect(memo.get(3003)).toBe('action');
    expect(memo.get(3004)).toBe('ref 21');
    expect(memo.get(3005)).toBe(FORGOTTEN);
    expect(memo.get(1 << 20)).toBeUndefined();
    // MEMOIZE stores at Python's len(memo), the slots stored; the slots are sparse, not dense.
    expect(memo.count).toBe(1005);
    expect(memo.next).toBe(1005);
    expect(memo.dense).toBe(false);
    // Only a ref's slot is a positive odd int (what the frames-list fast path looks for).
    for (const index of [0, 3, 3001, 3002, 3003, 3005]) {
      const raw = memo.raw(index);
      expect(raw > 0 && (raw & 1) === 1).toBe(false);
    }
    expect(memo.raw(3004) & 1).toBe(1);
  });

  it('moves its version when a stored slot is stored again, and only then', () => {
    const memo = new Memo(() => undefined);
    memo.put(0, 'a');
    memo.put(1, 'b');
    memo.putRef(2, 4);
    expect(memo.version).toBe(0);
    memo.put(0, 'c');
    expect(memo.version).toBe(1);
    expect(memo.get(0)).toBe('c');
    memo.put(1, { b: 2 });
    memo.put(1, 'd');
    expect(memo.version).toBe(3);
    expect(memo.get(1)).toBe('d');
    expect(memo.count).toBe(3);
    expect(memo.dense).toBe(true);
  });
});
