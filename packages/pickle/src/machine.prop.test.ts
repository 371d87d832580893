/**
 * The streaming pickle machine against itself: for arbitrary opcode sequences, and for pickles of
 * arbitrary plain values as the writer lays them out (strings and ints of every operand width,
 * nested containers, memo references, frames), the machine ends in the same value or the same
 * error wherever the chunks end, and with its fast paths as without them.
 *
 * Runs: FC_NUM_RUNS per property (default 200); seeded (FC_SEED overrides, FC_PATH replays).
 */
import { assertYielding } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withoutFastPaths } from './machine';
import { cuts, opcodeSequences, outcome, parameters } from './machine-test-support';
import { pickle } from './pickle';
import { unpickle } from './unpickle';

/** Plain values: no floats that equality cannot compare (NaN), keys strings. */
const values = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }).filter((n) => n > 2n ** 53n),
    fc.double({ noNaN: true }),
    fc.string({ unit: 'grapheme', maxLength: 300 }),
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 6 }),
  ),
})).value;

describe('the streaming pickle machine', () => {
  it('reads arbitrary opcode sequences the same wherever the chunks end, fast paths or not', async () => {
    await assertYielding(
      fc.property(opcodeSequences, cuts, (bytes, chunks) => {
        const whole = outcome(bytes, []);
        expect(outcome(bytes, chunks)).toEqual(whole);
        expect(withoutFastPaths(() => outcome(bytes, chunks))).toEqual(whole);
      }),
      parameters,
    );
  });

  it('reads pickled plain values, with memo references, in chunks of any length', async () => {
    await assertYielding(
      fc.property(values, cuts, (value, chunks) => {
        const bytes = pickle(value as never);
        const read = outcome(bytes, chunks);
        expect(read.error).toBeUndefined();
        expect(read.value).toEqual(value);
        expect(unpickle(bytes)).toEqual(value);
      }),
      parameters,
    );
  });

  it('names the byte offset of a cut opcode, and of a truncated pickle', () => {
    const bytes = pickle({ a: 'x'.repeat(300), b: [1, 2] });
    // Cut inside the long string, then between two opcodes.
    const cut = bytes.subarray(0, 40);
    expect(outcome(cut, [3]).error).toMatch(
      /p: byte offset 18: expected 283 more byte\(s\) of operand, found the end of the file/,
    );
    expect(outcome(cut, [3]).error).toBe(outcome(cut, []).error);
    const between = bytes.subarray(0, bytes.length - 1);
    expect(outcome(between, [5]).error).toMatch(
      /p: byte offset \d+: expected an opcode \(STOP ends a pickle\), found the end of the file/,
    );
    expect(outcome(Uint8Array.from([0x80, 2, 0x63, 0x6f, 0x73, 0x0a]), [1]).error).toMatch(
      /byte offset 2: .*GLOBAL, which would import or call Python code/,
    );
  });
});
