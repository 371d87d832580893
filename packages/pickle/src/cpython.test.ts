/**
 * The reader and the writer against CPython, when python3 is on PATH: seeded plain values that
 * Python pickles with every protocol (0 to 5) are read as Python reads them, and what `pickle`
 * writes Python reads to the same values and dumps again, protocol 4, to the same bytes.
 */
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type PickleValue, pickle } from './pickle';
import { unpickle } from './unpickle';

const hasPython = spawnSync('python3', ['--version']).status === 0;

/** Runs a python3 script on `input`; its stdout's lines. */
function python(script: string, input: string): string[] {
  const run = spawnSync('python3', ['-c', script], { input, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (run.status !== 0) throw new Error(`python3 failed: ${run.stderr}`);
  return run.stdout.trim().split('\n');
}

/** JSON values (so Python can be given them), strings of every plane, nested. */
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    fc.maxSafeInteger(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x)),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.constantFrom('\\', '\n', '\r\n', '\0', '\x1a', 'é', '✓', '\u{1f600}', 'a\\u0041'),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie('value'), { maxKeys: 5 }),
  ),
})).value;

const VALUES = fc.sample(json, { seed: 20_261_127, numRuns: 150 });

describe.skipIf(!hasPython)('against CPython', () => {
  it('reads what pickle.dumps writes with protocols 0 to 5', () => {
    const lines = python(
      [
        'import json, pickle, sys',
        'for line in sys.stdin:',
        '    value = json.loads(line)',
        '    print(" ".join(pickle.dumps(value, protocol=p).hex() for p in range(6)))',
      ].join('\n'),
      VALUES.map((value) => JSON.stringify(value)).join('\n'),
    );
    expect(lines).toHaveLength(VALUES.length);
    lines.forEach((line, i) => {
      for (const hex of line.split(' ')) {
        expect(unpickle(Uint8Array.from(Buffer.from(hex, 'hex')))).toEqual(VALUES[i]);
      }
    });
  });

  it('writes what pickle.load reads to the same values, and dumps again to the same bytes', () => {
    const written = VALUES.map((value) =>
      Buffer.from(pickle(value as PickleValue)).toString('hex'),
    );
    const lines = python(
      [
        'import json, pickle, sys',
        'for line in sys.stdin:',
        '    data = bytes.fromhex(line.strip())',
        '    value = pickle.loads(data)',
        '    again = pickle.dumps(value, protocol=4) == data',
        '    print(json.dumps([value, again]))',
      ].join('\n'),
      written.join('\n'),
    );
    lines.forEach((line, i) => {
      expect(JSON.parse(line)).toEqual([VALUES[i], true]);
    });
  });

  it('has python3 write its types: big ints, tuples, floats that are integral', () => {
    const [line] = python(
      [
        'import pickle, sys',
        'value = {"big": 2**64 + 1, "neg": -2**70, "tuple": (0, 0), "four": (1, 2, 3, 4),',
        '         "empty": (), "float": 3.0, "none": None, "yes": True}',
        'print(pickle.dumps(value, protocol=4).hex())',
      ].join('\n'),
      '',
    );
    expect(unpickle(Uint8Array.from(Buffer.from(line!, 'hex')))).toEqual({
      big: 2n ** 64n + 1n,
      neg: -(2n ** 70n),
      tuple: [0, 0],
      four: [1, 2, 3, 4],
      empty: [],
      float: 3,
      none: null,
      yes: true,
    });
  });
});

it.skipIf(hasPython)('skips the CPython comparisons: python3 is not on PATH', () => {
  console.warn('python3 not found: the comparisons with CPython were skipped');
});
