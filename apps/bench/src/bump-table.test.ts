import { describe, expect, it } from 'vitest';
import { bumpTable } from './bump-table';

describe('bump+table peer', () => {
  it('bumps, aligns, and refuses what does not fit', () => {
    const a = bumpTable(64, 1000);
    expect(a.allocate(10)).toBe(1000);
    expect(a.allocate(10)).toBe(1016);
    expect(a.allocate(8, 32)).toBe(1056);
    expect(a.allocate(9)).toBeNull();
  });

  it('finds a freed block in its table, once', () => {
    const a = bumpTable(1 << 20);
    const x = a.allocate(100)!;
    const y = a.allocate(200)!;
    a.free(x);
    expect(() => a.free(x)).toThrow(/not a live block/);
    expect(() => a.free(y + 8)).toThrow(/not a live block/);
    a.free(y);
  });

  it('starts over on reset, every record forgotten', () => {
    const a = bumpTable(1 << 20);
    const x = a.allocate(100)!;
    a.reset!();
    expect(() => a.free(x)).toThrow(/not a live block/);
    expect(a.allocate(100)).toBe(0);
  });
});
