/**
 * The dict fast path of the streaming pickle machine changes no result: lists of dicts of
 * scalars, strings and empty lists (trace entries, as protocol 4 lays them out, repeated keys as
 * memo references), whole or damaged, read in chunks of any length, end in the same value or the
 * same error with the fast path as without it.
 *
 * Runs: FC_NUM_RUNS per property (default 200); seeded (FC_SEED overrides, FC_PATH replays).
 */
import { assertYielding } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withoutFastPaths } from './machine';
import { cuts, outcome, parameters } from './machine-test-support';
import { pickle } from './pickle';

const scalar = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: 0, max: 255 }),
  fc.integer({ min: 256, max: 65_535 }),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  fc.double({ noNaN: true }),
  fc.constantFrom('N/A', '', 'alloc', 'free_requested'),
  fc.string({ maxLength: 12 }),
  fc.constant([]),
);

/** Keys drawn from a few, so that most come back as memo references. */
const key = fc.oneof(fc.constantFrom('action', 'addr', 'size', 'stream', 'time_us'), fc.string());

const entries = fc.array(fc.dictionary(key, scalar, { minKeys: 1, maxKeys: 70 }), {
  minLength: 1,
  maxLength: 12,
});

const damage = fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 });

/** Bytes of a short string, memoized. */
function text(value: string): number[] {
  const bytes = [...new TextEncoder().encode(value)];
  return [0x8c, bytes.length, ...bytes, 0x94];
}

/** A protocol 4 pickle of a dict: `} MEMOIZE ( …body… SETITEMS`, after `before`, then STOP. */
function dict(body: number[], before: number[] = []): Uint8Array {
  return Uint8Array.from([0x80, 4, ...before, 0x7d, 0x94, 0x28, ...body, 0x75, 0x2e]);
}

/** Four pairs of plain keys and values, the shape the fast path takes. */
const PLAIN = [
  ...text('a'),
  0x4b,
  1,
  ...text('b'),
  0x4b,
  2,
  ...text('c'),
  0x4e,
  ...text('d'),
  0x88,
];

/** Pickles the generator does not write: odd shapes around dicts of over three pairs. */
const HAND_MADE: Record<string, Uint8Array> = {
  // The memo: 0 the dict, 1 'a', 2 'b', 3 'c', 4 'd', then 'e' (5), the empty list (6), 'f' (7).
  'a value that refers to a list of the same dict': dict([
    ...PLAIN,
    ...text('e'),
    0x5d,
    0x94,
    ...text('f'),
    0x68,
    6,
  ]),
  'a value that refers to the dict itself': dict([...PLAIN, ...text('e'), 0x68, 0]),
  'a value that refers to a string of the same dict': dict([...PLAIN, ...text('e'), 0x68, 2]),
  'a key that refers to a string of the same dict': dict([...PLAIN, 0x68, 1, 0x4b, 9]),
  'a key that refers to a list': dict([...PLAIN, 0x68, 0, 0x4b, 9], [0x5d, 0x94, 0x30]),
  'a key that refers to a dict': dict([...PLAIN, 0x68, 0, 0x4b, 9], [0x7d, 0x94, 0x30]),
  'a key that refers to the dict itself': dict([...PLAIN, 0x68, 0, 0x4b, 9]),
  'a key without its value': dict([...PLAIN, ...text('e')]),
  'a value that refers to a slot not stored': dict([...PLAIN, ...text('e'), 0x6a, 9, 9, 0, 0]),
  'integers of every width': dict([
    ...PLAIN,
    ...text('e'),
    0x8a,
    0,
    ...text('f'),
    0x8a,
    8,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    0x88,
    ...text('g'),
    0x4a,
    0xff,
    0xff,
    0xff,
    0xff,
    ...text('h'),
    0x47,
    0x3f,
    0xf0,
    0,
    0,
    0,
    0,
    0,
    0,
  ]),
  'a string memoized by BINPUT': dict([...PLAIN, 0x8c, 1, 0x65, 0x71, 9, 0x4b, 1]),
};

describe('the dict fast path', () => {
  it.each(Object.keys(HAND_MADE))('reads %s as the opcodes one by one do', (name) => {
    const bytes = HAND_MADE[name]!;
    for (let n = 1; n <= bytes.length; n++) {
      const read = outcome(bytes, [n]);
      expect(withoutFastPaths(() => outcome(bytes, [n]))).toEqual(read);
    }
  });

  it('reads dicts of scalars and strings as they were written, wherever the chunks end', async () => {
    await assertYielding(
      fc.property(entries, cuts, (value, chunks) => {
        const bytes = pickle({ device_traces: [value] });
        const read = outcome(bytes, chunks);
        expect(read).toEqual(outcome(bytes, [bytes.length]));
        expect(withoutFastPaths(() => outcome(bytes, chunks))).toEqual(read);
        expect(read.value).toEqual({ device_traces: [value] });
      }),
      parameters,
    );
  });

  it('changes nothing in damaged pickles of such dicts', async () => {
    await assertYielding(
      fc.property(entries, cuts, damage, (value, chunks, changes) => {
        const bytes = pickle({ device_traces: [value] });
        for (const [at, byte] of changes) bytes[2 + (at % (bytes.length - 2))] = byte;
        expect(withoutFastPaths(() => outcome(bytes, chunks))).toEqual(outcome(bytes, chunks));
      }),
      parameters,
    );
  });
});
