import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { propertyParameters } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasPython, python } from '../test/support/python';
import { unpickle } from '../test/support/unpickle';
import { type PickleValue, pickle, pickleFloat, pickleTuple } from './pickle';

const dir = mkdtempSync(join(tmpdir(), 'allot-stats-pickle-'));

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
  it('reads back with the minimal reader', () => {
    expect(unpickle(pickle(sample))).toEqual({
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
        expect(unpickle(pickle(v as PickleValue))).toEqual(v);
      }),
      propertyParameters({}),
    );
  });

  it('batches lists and dicts longer than 1000 items', () => {
    const list = Array.from({ length: 2500 }, (_, i) => i);
    const dict = Object.fromEntries(list.map((i) => [`k${i}`, i]));
    expect(unpickle(pickle({ list, dict }))).toEqual({ list, dict });
  });

  it.skipIf(!hasPython)('is read by python3 pickle.load, types included', () => {
    const file = join(dir, 'sample.pickle');
    writeFileSync(file, pickle(sample));
    const out = python(
      [
        'import pickle, sys, json',
        "d = pickle.load(open(sys.argv[1], 'rb'))",
        "assert d['huge'] == 2**64 + 1 and d['hugeNegative'] == -2**70",
        "assert d['big'] == 2**48 + 3 and d['negative'] == -2**40 and d['int32'] == -2**31",
        "assert isinstance(d['floatInt'], float) and isinstance(d['small'], int)",
        "assert d['tuple'] == (0, 0) and d['tuple4'] == (1, 2, 3, 4) and d['empty'] == ()",
        "assert d['none'] is None and d['yes'] is True and d['no'] is False",
        "assert d['text'] == 'h\\u00e9llo \\u2713' and len(d['long']) == 300",
        "assert 'skipped' not in d",
        "print(json.dumps(d['list']))",
      ].join('\n'),
      file,
    );
    expect(out.trim()).toBe('[1, "a", [2, [3]], {}]');
  });
});
