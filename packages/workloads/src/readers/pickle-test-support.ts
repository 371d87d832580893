/**
 * Pickles for the fuzz targets of the trace readers: a protocol header, then opcodes of plain data,
 * each followed by a few operand bytes, then STOP. Most are malformed somewhere, so the readers'
 * errors get as much exercise as their values.
 */
import fc from 'fast-check';

const OPCODES = Array.from(new TextEncoder().encode('(.012FIJKLMNXBCTUVaeghjlp]qrstu)d}G')).concat([
  0x80, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f, 0x90, 0x91, 0x94, 0x95,
  0x96,
]);

/** A pickle of up to 64 opcodes. */
export const pickles = fc
  .array(fc.tuple(fc.constantFrom(...OPCODES), fc.uint8Array({ maxLength: 4 })), { maxLength: 64 })
  .map((ops) =>
    Uint8Array.from([0x80, 2, ...ops.flatMap(([op, operand]) => [op, ...operand]), 0x2e]),
  );
