import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from './errors';
import { formatBytes } from './format';
import {
  alignDown,
  alignUp,
  checkRange,
  checkRequest,
  isPowerOfTwo,
  log2OfPowerOfTwo,
  nextPowerOfTwo,
} from './validate';

// FC_NUM_RUNS / FC_SEED lengthen or replay the run, as in every package's property tests.
const SEED = {
  seed: Number(process.env.FC_SEED ?? 7),
  numRuns: Number(process.env.FC_NUM_RUNS ?? 500),
};

describe('alignment arithmetic is exact far above 2^32', () => {
  it('isPowerOfTwo', () => {
    for (let k = 0; k <= 52; k++) expect(isPowerOfTwo(2 ** k)).toBe(true);
    for (const v of [0, -2, 3, 6, 2 ** 33 + 2 ** 32, 2 ** 40 - 1, 0.5, Number.NaN, 2 ** 53]) {
      expect(isPowerOfTwo(v)).toBe(false);
    }
  });

  it('alignUp / alignDown', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 50 }), fc.integer({ min: 0, max: 40 }), (v, k) => {
        const a = 2 ** k;
        const up = alignUp(v, a);
        const down = alignDown(v, a);
        expect(up % a).toBe(0);
        expect(down % a).toBe(0);
        expect(up >= v && up - v < a).toBe(true);
        expect(down <= v && v - down < a).toBe(true);
      }),
      SEED,
    );
    expect(alignUp(2 ** 40 + 1, 2 ** 32)).toBe(2 ** 40 + 2 ** 32);
  });

  it('nextPowerOfTwo and log2', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 51 }), (v) => {
        const p = nextPowerOfTwo(v);
        expect(isPowerOfTwo(p)).toBe(true);
        expect(p >= v && p / 2 < v).toBe(true);
        expect(2 ** log2OfPowerOfTwo(p)).toBe(p);
      }),
      SEED,
    );
  });
});

describe('checkRequest', () => {
  it('returns the alignment to honour', () => {
    expect(checkRequest(10, undefined, 8)).toBe(8);
    expect(checkRequest(10, 4, 8)).toBe(8);
    expect(checkRequest(10, 2 ** 40, 8)).toBe(2 ** 40);
  });

  it.each([
    [0, undefined],
    [-1, undefined],
    [1.5, undefined],
    [Number.NaN, undefined],
    [2 ** 53, undefined],
    [8, 3],
    [8, 0],
    [8, -8],
  ])('rejects size %s, alignment %s', (size, alignment) => {
    expect(() => checkRequest(size, alignment, 8)).toThrow(InvalidArgumentError);
  });
});

describe('formatBytes', () => {
  it('uses binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(20 * 2 ** 20)).toBe('20.00 MiB');
    expect(formatBytes(2 ** 48)).toBe('256.00 TiB');
  });

  it('rounds to significant figures when asked', () => {
    const three = { significantFigures: 3 };
    expect(formatBytes(512, three)).toBe('512 B');
    expect(formatBytes(1536, three)).toBe('1.50 KiB');
    expect(formatBytes(14.23 * 2 ** 30, three)).toBe('14.2 GiB');
    expect(formatBytes(2 ** 48, three)).toBe('256 TiB');
    expect(formatBytes(-1536, { significantFigures: 2 })).toBe('-1.5 KiB');
  });
});

describe('checkRange', () => {
  it('returns the range, base 0 by default, up to an end of exactly 2^53', () => {
    expect(checkRange({ capacity: 4096 })).toEqual({ capacity: 4096, base: 0 });
    expect(checkRange({ capacity: 2 ** 52, base: 2 ** 52 })).toEqual({
      capacity: 2 ** 52,
      base: 2 ** 52,
    });
  });

  it('names the option at fault', () => {
    const refused = (options: unknown) => {
      try {
        checkRange(options as { capacity: number });
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidArgumentError);
        return (error as InvalidArgumentError).argument;
      }
      return null;
    };
    expect(refused(null)).toBe('options');
    expect(refused(7)).toBe('options');
    expect(refused({})).toBe('capacity');
    expect(refused({ capacity: 0 })).toBe('capacity');
    expect(refused({ capacity: 1.5 })).toBe('capacity');
    expect(refused({ capacity: 64, base: -1 })).toBe('base');
    expect(refused({ capacity: 2 ** 52 + 1, base: 2 ** 52 })).toBe('capacity');
  });
});
