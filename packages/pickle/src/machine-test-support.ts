/**
 * What the machine's tests share: the properties' `parameters`; `outcome`, what the machine makes of
 * bytes cut into chunks (a plain value or an error message); and `opcodeSequences`, a protocol
 * header, then opcodes of plain data each with the operand bytes its kind takes (or a few bytes of
 * anything), then STOP: most are malformed somewhere, so the errors get as much exercise as the
 * values.
 */
import fc from 'fast-check';
import { PickleMachine } from './machine';
import { Op } from './opcodes';
import { PickleError } from './pickle-error';
import { plainValue } from './unpickle';

/** FC_NUM_RUNS per property (default 200); seeded (FC_SEED overrides, FC_PATH replays). */
export const parameters: fc.Parameters<unknown> = {
  numRuns: Number(process.env.FC_NUM_RUNS ?? 200),
  seed: Number(process.env.FC_SEED ?? 20_261_126),
  ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
};

/** Chunk lengths, cycled. */
export const cuts = fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 6 });

/**
 * What reading `bytes` in chunks of the given lengths (cycled; none: whole) ends in: a value or a
 * message.
 */
export function outcome(
  bytes: Uint8Array,
  chunks: readonly number[],
): { value?: unknown; error?: string } {
  const machine = new PickleMachine({ append: (_, value) => value }, { name: 'p' });
  try {
    let at = 0;
    for (let i = 0; at < bytes.length; i++) {
      const n = chunks.length === 0 ? bytes.length : chunks[i % chunks.length]!;
      machine.push(bytes.subarray(at, at + n));
      at += n;
    }
    const value = machine.end();
    return { value: plainValue(value, { at: 0, error: machine.error, maxVisits: 1_000_000 }) };
  } catch (error) {
    if (!(error instanceof PickleError)) throw error;
    return { error: error.message };
  }
}

/** Operand bytes of each opcode of plain data (0: none; -1: a line of text). */
const OPERANDS: Readonly<Record<number, number>> = {
  [Op.PROTO]: 1,
  [Op.FRAME]: 8,
  [Op.BININT1]: 1,
  [Op.BININT2]: 2,
  [Op.BININT]: 4,
  [Op.BINFLOAT]: 8,
  [Op.BINGET]: 1,
  [Op.LONG_BINGET]: 4,
  [Op.BINPUT]: 1,
  [Op.LONG_BINPUT]: 4,
  [Op.INT]: -1,
  [Op.LONG]: -1,
  [Op.FLOAT]: -1,
  [Op.STRING]: -1,
  [Op.UNICODE]: -1,
  [Op.GET]: -1,
  [Op.PUT]: -1,
};
const OPCODES = Object.values(Op).filter((op) => op !== Op.STOP);

/** An opcode and its operand: the width its kind takes, with a length prefix's text, or a line. */
const opcode = fc
  .tuple(fc.constantFrom(...OPCODES), fc.uint8Array({ maxLength: 6 }), fc.nat({ max: 9 }))
  .map(([op, bytes, small]): number[] => {
    const width = OPERANDS[op] ?? 0;
    if (width === -1)
      return [
        op,
        ...String(small)
          .split('')
          .map((c) => c.charCodeAt(0)),
        0x0a,
      ];
    if (op === Op.SHORT_BINUNICODE || op === Op.SHORT_BINBYTES || op === Op.LONG1) {
      return [op, bytes.length, ...bytes];
    }
    if (width > 0) return [op, ...Array.from({ length: width }, (_, i) => bytes[i] ?? small)];
    return [op, ...bytes.subarray(0, small % 3 === 0 ? bytes.length : 0)];
  });

/** Pickles of up to 64 opcodes (see the module comment). */
export const opcodeSequences = fc
  .array(opcode, { maxLength: 64 })
  .map((ops) => Uint8Array.from([Op.PROTO, 2, ...ops.flat(), Op.STOP]));
