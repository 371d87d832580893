/**
 * `unpickle` on pickles written by hand: the memo, frames, tuples, big ints and floats; `LONG1`
 * integers of every length and sign; the memo as Python keeps it; and errors that name the byte
 * offset of the opcode at fault.
 */
import { describe, expect, it } from 'vitest';
import { PickleError } from './pickle-error';
import { unpickle } from './unpickle';

function errorOf(fn: () => unknown): PickleError {
  try {
    fn();
  } catch (error) {
    if (error instanceof PickleError) return error;
    throw error;
  }
  throw new Error('expected a PickleError');
}

describe('unpickle', () => {
  it('reads memo, frames, tuples, big ints and floats (bytes written by hand)', () => {
    // protocol 4: FRAME, EMPTY_DICT, MEMOIZE, MARK, key 'a' → (1, -2, 2^40) tuple, key 'b' → 1.5
    const bytes = new Uint8Array([
      0x80, 4, 0x95, 40, 0, 0, 0, 0, 0, 0, 0, 0x7d, 0x94, 0x28, 0x8c, 1, 0x61, 0x94, 0x4b, 1, 0x4a,
      0xfe, 0xff, 0xff, 0xff, 0x8a, 6, 0, 0, 0, 0, 0, 1, 0x87, 0x8c, 1, 0x62, 0x47, 0x3f, 0xf8, 0,
      0, 0, 0, 0, 0, 0x75, 0x2e,
    ]);
    expect(unpickle(bytes)).toEqual({ a: [1, -2, 2 ** 40], b: 1.5 });
  });

  it('names the byte offset of a truncated file, an unknown opcode and a code opcode', () => {
    expect(errorOf(() => unpickle(new Uint8Array([0x80, 4, 0x7d]))).message).toMatch(
      /byte offset 3: expected an opcode \(STOP ends a pickle\), found the end of the file/,
    );
    expect(errorOf(() => unpickle(new Uint8Array([0x80, 4, 0xff]))).message).toMatch(
      /byte offset 2: expected a pickle opcode, found byte 0xff/,
    );
    const global = errorOf(() => unpickle(new Uint8Array([0x80, 2, 0x63, 0x6f, 0x73, 0x0a])));
    expect(global.message).toMatch(/opcode GLOBAL, which would import or call Python code/);
    expect(errorOf(() => unpickle(new Uint8Array([0x80, 4, 0x4a, 1]))).message).toMatch(
      /byte offset 2: expected 3 more byte\(s\) of operand, found the end of the file/,
    );
  });

  it('decodes LONG1 integers of every length and sign exactly', () => {
    // Two's complement little-endian, as Python writes them; a number when safe, else a bigint.
    const reference = (payload: number[]): number | bigint => {
      let value = 0n;
      for (let i = payload.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(payload[i]!);
      if (payload.length > 0 && payload[payload.length - 1]! >= 0x80) {
        value -= 1n << BigInt(8 * payload.length);
      }
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(value)
        : value;
    };
    let seed = 12345;
    const byte = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 24;
    };
    for (let length = 0; length <= 10; length++) {
      for (let trial = 0; trial < 50; trial++) {
        const payload = Array.from({ length }, byte);
        if (length > 0 && trial < 4) payload[length - 1] = [0x00, 0x7f, 0x80, 0xff][trial]!;
        const bytes = new Uint8Array([0x80, 4, 0x8a, length, ...payload, 0x2e]);
        expect(unpickle(bytes), `${payload}`).toEqual(reference(payload));
      }
    }
  });

  it('keeps the memo as Python does: sparse and dense indices, MEMOIZE at its size', () => {
    // [PUT 5 of 'x'; PUT 0, 1 of 'a', 'b'; MEMOIZE 'c' (index 3: three entries); GET 5, 3]
    const op = (code: number, ...rest: number[]) => [code, ...rest];
    const str = (c: string) => op(0x8c, 1, c.charCodeAt(0));
    const bytes = new Uint8Array([
      0x80,
      4,
      0x5d,
      0x28,
      ...str('x'),
      ...op(0x71, 5),
      ...str('a'),
      ...op(0x71, 0),
      ...str('b'),
      ...op(0x71, 1),
      ...str('c'),
      0x94,
      ...op(0x68, 5),
      ...op(0x68, 3),
      ...op(0x68, 0),
      0x65,
      0x2e,
    ]);
    expect(unpickle(bytes)).toEqual(['x', 'a', 'b', 'c', 'x', 'c', 'a']);
    const missing = new Uint8Array([0x80, 4, ...str('a'), ...op(0x71, 0), ...op(0x68, 2), 0x2e]);
    expect(errorOf(() => unpickle(missing)).message).toMatch(/a memo index that was stored/);
  });
});
