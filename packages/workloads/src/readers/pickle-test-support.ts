/**
 * Pickles for the tests of the pickle readers: `pickles`, a protocol header, then opcodes of plain
 * data, each followed by a few operand bytes, then STOP (most are malformed somewhere, so the
 * readers' errors get as much exercise as their values); `pickle`, a plain value as protocol 4
 * lays it out; `outcome`, what the streaming machine makes of bytes cut into chunks; and the
 * properties' `parameters`.
 */
import fc from 'fast-check';
import { TraceFormatError } from '../errors';
import { PickleMachine, plainValue } from './pickle-machine';

/** FC_NUM_RUNS per property (default 200); seeded (FC_SEED overrides, FC_PATH replays). */
export const parameters: fc.Parameters<unknown> = {
  numRuns: Number(process.env.FC_NUM_RUNS ?? 200),
  seed: Number(process.env.FC_SEED ?? 20_261_126),
  ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
};

/**
 * What reading `bytes` in chunks of the given lengths (cycled; none: whole) ends in: a value or a
 * message.
 */
export function outcome(
  bytes: Uint8Array,
  cuts: readonly number[],
): { value?: unknown; error?: string } {
  const machine = new PickleMachine('p', { append: (_, value) => value });
  try {
    let at = 0;
    for (let i = 0; at < bytes.length; i++) {
      const n = cuts.length === 0 ? bytes.length : cuts[i % cuts.length]!;
      machine.push(bytes.subarray(at, at + n));
      at += n;
    }
    return { value: plainValue(machine.end(), { name: 'p', at: 0, maxVisits: 1_000_000 }) };
  } catch (error) {
    if (!(error instanceof TraceFormatError)) throw error;
    return { error: error.message };
  }
}

const OPCODES = Array.from(new TextEncoder().encode('(.012FIJKLMNXBCTUVaeghjlp]qrstu)d}G')).concat([
  0x80, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f, 0x90, 0x91, 0x94, 0x95,
  0x96,
]);

/** A pickle of up to `maxLength` opcodes. */
export const pickles = fc
  .array(fc.tuple(fc.constantFrom(...OPCODES), fc.uint8Array({ maxLength: 4 })), { maxLength: 64 })
  .map((ops) =>
    Uint8Array.from([0x80, 2, ...ops.flatMap(([op, operand]) => [op, ...operand]), 0x2e]),
  );

/**
 * `value` pickled as protocol 4 lays it out: MEMOIZE after each container and string, and, as
 * CPython does for an object it met before, a memo reference for a string or container seen again.
 */
export function pickle(value: unknown): Uint8Array {
  const out: number[] = [0x80, 4];
  const memo = new Map<unknown, number>();
  let next = 0;
  const u32 = (n: number) => out.push(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24);
  const write = (v: unknown): void => {
    if (v === null) out.push(0x4e);
    else if (v === true) out.push(0x88);
    else if (v === false) out.push(0x89);
    else if (typeof v === 'number' && Number.isSafeInteger(v) && !Object.is(v, -0)) {
      if (v >= 0 && v < 256) out.push(0x4b, v);
      else if (v >= 0 && v < 65536) out.push(0x4d, v & 0xff, v >> 8);
      else if (v >= -(2 ** 31) && v < 2 ** 31) {
        out.push(0x4a);
        u32(v >>> 0);
      } else {
        let big = BigInt(v);
        const bytes: number[] = [];
        while (big !== 0n && big !== -1n) {
          bytes.push(Number(big & 0xffn));
          big >>= 8n;
        }
        if ((bytes[bytes.length - 1]! & 0x80) !== 0) bytes.push(v < 0 ? 0xff : 0);
        out.push(0x8a, bytes.length, ...bytes);
      }
    } else if (typeof v === 'number') {
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, v, false);
      out.push(0x47, ...new Uint8Array(view.buffer));
    } else if (memo.has(v)) {
      out.push(0x6a);
      u32(memo.get(v)!);
    } else if (typeof v === 'string') {
      const bytes = new TextEncoder().encode(v);
      if (bytes.length < 256) out.push(0x8c, bytes.length);
      else {
        out.push(0x58);
        u32(bytes.length);
      }
      out.push(...bytes, 0x94);
      memo.set(v, next++);
    } else if (Array.isArray(v)) {
      out.push(0x5d, 0x94);
      memo.set(v, next++);
      if (v.length === 1) {
        write(v[0]);
        out.push(0x61);
      } else {
        // CPython's batches: MARK … APPENDS for every thousand items.
        for (let i = 0; i < v.length; i += 1000) {
          out.push(0x28);
          for (const item of v.slice(i, i + 1000)) write(item);
          out.push(0x65);
        }
      }
    } else {
      const entries = Object.entries(v as Record<string, unknown>);
      out.push(0x7d, 0x94);
      memo.set(v, next++);
      if (entries.length > 0) {
        out.push(0x28);
        for (const [key, item] of entries) {
          write(key);
          write(item);
        }
        out.push(0x75);
      }
    }
  };
  write(value);
  out.push(0x2e);
  return Uint8Array.from(out);
}
