import { describe, expect, it } from 'vitest';
import { Random } from './random';

describe('Random', () => {
  it('gives the same sequence for the same seed and a different one for another seed', () => {
    const a = new Random(42);
    const b = new Random(42);
    const c = new Random(43);
    const seqA = Array.from({ length: 16 }, () => a.nextUint32());
    const seqB = Array.from({ length: 16 }, () => b.nextUint32());
    const seqC = Array.from({ length: 16 }, () => c.nextUint32());
    expect(seqA).toEqual(seqB);
    expect(seqA).not.toEqual(seqC);
  });

  it('uses the high bits of large seeds', () => {
    expect(new Random(2 ** 40).nextUint32()).not.toBe(new Random(2 ** 41).nextUint32());
  });

  it('keeps values in range', () => {
    const random = new Random(7);
    for (let i = 0; i < 10_000; i++) {
      const f = random.next();
      expect(f >= 0 && f < 1).toBe(true);
      const n = random.integer(-3, 5);
      expect(n >= -3 && n <= 5 && Number.isInteger(n)).toBe(true);
      const s = random.logUniform(16, 65_536);
      expect(s >= 16 && s <= 65_536 && Number.isInteger(s)).toBe(true);
    }
  });

  it('spreads log-uniform sizes evenly over octaves', () => {
    const random = new Random(3);
    const below1k = Array.from({ length: 20_000 }, () => random.logUniform(16, 65_536)).filter(
      (s) => s < 1024,
    ).length;
    // 16..1024 is 6 of the 12 octaves: about half the requests.
    expect(below1k / 20_000).toBeGreaterThan(0.45);
    expect(below1k / 20_000).toBeLessThan(0.55);
  });

  it('rejects a seed that is not a safe integer', () => {
    expect(() => new Random(1.5)).toThrow(TypeError);
  });
});
