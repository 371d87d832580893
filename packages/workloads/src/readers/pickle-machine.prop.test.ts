/**
 * The streaming pickle machine against the whole-buffer `unpickle`, and against itself cut into
 * chunks: for arbitrary opcode sequences, and for pickles of arbitrary plain values that Python's
 * own layout would give (strings and ints of every operand width, nested containers, memo
 * references), the machine ends in the same value or the same error wherever the chunks end.
 *
 * Runs: FC_NUM_RUNS per property (default 200); seeded (FC_SEED overrides, FC_PATH replays).
 */

import { assertYielding } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors';
import { unpickle } from './pickle';
import { outcome, parameters, pickle, pickles } from './pickle-test-support';

function whole(bytes: Uint8Array): { value?: unknown; error?: string } {
  try {
    return { value: unpickle(bytes, { name: 'p' }) };
  } catch (error) {
    if (!(error instanceof TraceFormatError)) throw error;
    return { error: error.message };
  }
}

const cuts = fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 8 });

/** Plain values as a snapshot holds them: no floats that JSON cannot compare (NaN), keys strings. */
const values = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    fc.double({ noNaN: true }),
    fc.string({ unit: 'grapheme', maxLength: 300 }),
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 6 }),
  ),
})).value;

describe('the streaming pickle machine', () => {
  it('reads arbitrary opcode sequences as unpickle does, wherever the chunks end', async () => {
    await assertYielding(
      fc.property(pickles, cuts, (bytes, chunks) => {
        const expected = outcome(bytes, []);
        expect(outcome(bytes, chunks)).toEqual(expected);
        const reference = whole(bytes);
        // Both read the same values; only their limits and the wording of a few errors differ.
        if (expected.value !== undefined && reference.value !== undefined) {
          expect(expected.value).toEqual(reference.value);
        }
        expect(expected.error === undefined).toBe(reference.error === undefined);
      }),
      parameters,
    );
  });

  it('reads pickled plain values, with memo references, in chunks of any length', async () => {
    await assertYielding(
      fc.property(values, cuts, (value, chunks) => {
        const bytes = pickle(value);
        const read = outcome(bytes, chunks);
        expect(read.error).toBeUndefined();
        expect(read.value).toEqual(value);
        expect(read.value).toEqual(whole(bytes).value);
      }),
      parameters,
    );
  });

  it('names the byte offset of a cut opcode, and of a truncated pickle', () => {
    const bytes = pickle({ a: 'x'.repeat(300), b: [1, 2] });
    const cut = bytes.subarray(0, 20);
    expect(outcome(cut, [3]).error).toMatch(
      /p: byte offset \d+: expected an opcode \(STOP ends a pickle\), found the end of the file/,
    );
    expect(outcome(cut, [3]).error).toBe(outcome(cut, []).error);
    expect(outcome(Uint8Array.from([0x80, 2, 0x63, 0x6f, 0x73, 0x0a]), [1]).error).toMatch(
      /byte offset 2: .*GLOBAL, which would import or call Python code/,
    );
  });
});
