/**
 * `pickle` writes plain values that the reader gives back, Python types included (a tuple is told
 * from a list, an integral float stays a float), in batches of a thousand items as CPython does.
 */
import { propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Op } from './opcodes';
import { type PickleValue, pickle, pickleFloat, pickleTuple } from './pickle';
import { type UnpickledValue, unpickle } from './unpickle';

/** `bytes` read back, tuples as `{ tuple: [...] }`, so that they can be told from lists. */
const read = (bytes: Uint8Array) =>
  unpickle(bytes, { tuple: (items) => ({ tuple: items }) as unknown as UnpickledValue });

const sample: PickleValue = {
  none: null,
  yes: true,
  no: false,
  small: 7,
  byte: 255,
  short: 65535,
  int32: -2147483648,
  int32max: 2147483647,
  big: 2 ** 48 + 3,
  negative: -(2 ** 40),
  huge: 2n ** 64n + 1n,
  hugeNegative: -(2n ** 70n),
  float: 0.25,
  floatInt: pickleFloat(3),
  text: 'héllo ✓',
  long: 'x'.repeat(300),
  list: [1, 'a', [2, [3]], {}],
  tuple: pickleTuple(0, 0),
  tuple4: pickleTuple(1, 2, 3, 4),
  empty: pickleTuple(),
  repeated: ['key', 'key', 'key'],
  skipped: undefined,
};

describe('pickle', () => {
  it('reads back, tuples and floats as they were written', () => {
    const bytes = pickle(sample);
    expect(read(bytes)).toEqual({
      none: null,
      yes: true,
      no: false,
      small: 7,
      byte: 255,
      short: 65535,
      int32: -2147483648,
      int32max: 2147483647,
      big: 2 ** 48 + 3,
      negative: -(2 ** 40),
      huge: 2n ** 64n + 1n,
      hugeNegative: -(2n ** 70n),
      float: 0.25,
      floatInt: 3,
      text: 'héllo ✓',
      long: 'x'.repeat(300),
      list: [1, 'a', [2, [3]], {}],
      tuple: { tuple: [0, 0] },
      tuple4: { tuple: [1, 2, 3, 4] },
      empty: { tuple: [] },
      repeated: ['key', 'key', 'key'],
    });
    // The float 3.0 is a BINFLOAT, the string 'key' written once and referred to twice.
    expect(bytes.filter((byte) => byte === Op.BINFLOAT).length).toBe(2);
    expect(new TextDecoder('latin1').decode(bytes).split('key').length).toBe(2);
  });

  it('round-trips arbitrary JSON-like values through the reader', () => {
    const value = fc.letrec((tie) => ({
      any: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.integer(),
        fc.maxSafeInteger(),
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x)),
        fc.string({ unit: 'grapheme' }),
        fc.array(tie('any'), { maxLength: 5 }),
        fc.dictionary(fc.string(), tie('any'), { maxKeys: 5 }),
      ),
    })).any;
    fc.assert(
      fc.property(value, (v) => {
        expect(read(pickle(v as PickleValue))).toEqual(v);
      }),
      propertyParameters({}),
    );
  });

  it('batches lists and dicts longer than 1000 items', () => {
    const list = Array.from({ length: 2500 }, (_, i) => i);
    const dict = Object.fromEntries(list.map((i) => [`k${i}`, i]));
    expect(read(pickle({ list, dict }))).toEqual({ list, dict });
  });

  it('writes an array met again as a reference, so shared values stay shared', () => {
    const shared = [1, 2];
    const cycle: unknown[] = [];
    cycle.push(cycle);
    const back = read(pickle({ a: shared, b: shared })) as Record<string, unknown>;
    expect(back.a).toBe(back.b);
    const loop = read(pickle(cycle as PickleValue)) as unknown[];
    expect(loop[0]).toBe(loop);
  });
});
