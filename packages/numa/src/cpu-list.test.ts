import { InvalidArgumentError } from '@allot/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatCpuList, parseCpuList } from './cpu-list';

describe('cpu lists', () => {
  it('parses the kernel format', () => {
    expect(parseCpuList('')).toEqual([]);
    expect(parseCpuList('0\n')).toEqual([0]);
    expect(parseCpuList('0-3,8-11,16')).toEqual([0, 1, 2, 3, 8, 9, 10, 11, 16]);
    expect(parseCpuList('0-15:4')).toEqual([0, 4, 8, 12]);
    expect(parseCpuList('0-11:2/4')).toEqual([0, 1, 4, 5, 8, 9]);
    expect(parseCpuList('3,1,1-2')).toEqual([1, 2, 3]);
  });

  it('refuses what is not a list', () => {
    for (const bad of ['a', '1-', '3-1', '1,,2', '0-4:0']) {
      expect(() => parseCpuList(bad), bad).toThrow(InvalidArgumentError);
    }
  });

  it('formats and parses back (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.nat(300), { maxLength: 60, size: 'max' }), (numbers) => {
        const sorted = [...numbers].sort((a, b) => a - b);
        expect(parseCpuList(formatCpuList(numbers))).toEqual(sorted);
      }),
      { seed: 0x5eed },
    );
    expect(formatCpuList([0, 1, 2, 3, 8])).toBe('0-3,8');
  });
});
