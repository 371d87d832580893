/**
 * The operands of protocol 0's opcodes, a line of text each: decimal ints (`INT`, with `00` and `01`
 * for False and True; `LONG`), a float's repr (`FLOAT`), a string in raw-unicode-escape
 * (`UNICODE`) or as a quoted literal (`STRING`), and a memo index (`GET`, `PUT`).
 */
import { Op } from './opcodes';

/** What a line operand's checks call on malformed text: `fail(expected, found)` throws. */
export type LineFail = (expected: string, found: string) => never;

/** Whether `op` takes a line of text as its operand. */
export function takesLine(op: number): boolean {
  return (
    op === Op.INT ||
    op === Op.LONG ||
    op === Op.FLOAT ||
    op === Op.UNICODE ||
    op === Op.STRING ||
    op === Op.GET ||
    op === Op.PUT
  );
}

/**
 * The value the line opcode `op` (any but `GET` and `PUT`) pushes; a decimal of more than
 * `maxDigits` digits fails.
 */
export function lineValue(op: number, line: string, maxDigits: number, fail: LineFail): unknown {
  const trimmed = line.trim();
  switch (op) {
    case Op.INT:
      if (trimmed === '00') return false;
      if (trimmed === '01') return true;
      return decimal(trimmed, maxDigits, fail);
    case Op.LONG:
      return decimal(trimmed.replace(/L$/, ''), maxDigits, fail);
    case Op.FLOAT: {
      const value = Number(trimmed);
      if (trimmed === '' || Number.isNaN(value)) fail('a decimal float', JSON.stringify(trimmed));
      return value;
    }
    case Op.UNICODE:
      return rawUnicode(line, fail);
    default: // STRING
      return trimmed.replace(/^(['"])(.*)\1$/, '$2');
  }
}

/** A memo index written in decimal (`GET`, `PUT`). */
export function memoIndex(line: string, fail: LineFail): number {
  const text = line.trim();
  if (!/^\d+$/.test(text)) fail('a decimal memo index', JSON.stringify(text));
  return Number(text);
}

/** A decimal integer: a number when it is safe, else a bigint. */
function decimal(text: string, maxDigits: number, fail: LineFail): number | bigint {
  if (!/^[-+]?\d+$/.test(text)) fail('a decimal integer', JSON.stringify(text));
  if (text.replace(/^[-+]/, '').length > maxDigits) {
    fail(
      `at most ${maxDigits.toLocaleString('en-US')} digits in one integer (the pickle reader's limit)`,
      'more',
    );
  }
  const value = BigInt(text);
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

/**
 * `UNICODE`'s raw-unicode-escape: `\uXXXX` and `\UXXXXXXXX` are code points (Python writes a
 * backslash, a newline and the like so), any other character is itself.
 */
function rawUnicode(line: string, fail: LineFail): string {
  return line.replace(/\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})/g, (_, short, long) => {
    const code = Number.parseInt(short ?? long, 16);
    if (code > 0x10ffff) fail('a code point up to U+10FFFF', `\\U${long}`);
    return String.fromCodePoint(code);
  });
}
