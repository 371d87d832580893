/**
 * The operands of pickle opcodes, decoded from a buffer: strings (a short one seen lately is the
 * very string again), little-endian ints of one, two or four bytes, and `LONG1`/`LONG4` integers,
 * exact as numbers up to 52 bits; and {@link readOperand}, the one decoding of the opcodes the fast
 * paths read (a dict's keys and values, a frames list's items), which decides nothing about them.
 */

export const utf8 = new TextDecoder('utf-8', { fatal: false });
export const latin1 = new TextDecoder('latin1');

/** A string or bytes value of opcode `op` from `n` bytes at `at`. */
export function text(op: number, buf: Uint8Array, at: number, n: number): string | Uint8Array {
  if (op === 0x8c || op === 0x58 || op === 0x8d) return decodeUtf8(buf, at, n);
  if (op === 0x54 || op === 0x55) return latin1.decode(buf.subarray(at, at + n));
  return buf.slice(at, at + n);
}

/** Longest string {@link decodeUtf8} keeps for reuse, in bytes. */
const SHORT_TEXT = 32;
/** Short strings kept for reuse, by a hash of their bytes (one per slot, the latest). */
const SHORT_TEXT_SLOTS = 1024;
const shortTextLength = new Int16Array(SHORT_TEXT_SLOTS).fill(-1);
const shortTextBytes = new Uint8Array(SHORT_TEXT_SLOTS * SHORT_TEXT);
const shortTexts = new Array<string | undefined>(SHORT_TEXT_SLOTS).fill(undefined);

/**
 * UTF-8 text of `n` bytes at `at`: a short string seen lately is the very string again (a snapshot
 * writes `'N/A'` anew in every entry), other short ASCII without the decoder's call overhead.
 */
export function decodeUtf8(buf: Uint8Array, at: number, n: number): string {
  if (n > SHORT_TEXT) return utf8.decode(buf.subarray(at, at + n));
  // A short string seen lately comes back as the very string: no decoding, no garbage.
  let hash = n;
  for (let i = at; i < at + n; i++) hash = Math.imul(hash ^ buf[i]!, 0x01000193);
  const slot = (hash ^ (hash >>> 15)) & (SHORT_TEXT_SLOTS - 1);
  const from = slot * SHORT_TEXT;
  if (shortTextLength[slot] === n) {
    let same = true;
    for (let i = 0; i < n; i++) {
      if (shortTextBytes[from + i] !== buf[at + i]) {
        same = false;
        break;
      }
    }
    if (same) return shortTexts[slot]!;
  }
  let text = '';
  for (let i = at; i < at + n; i++) {
    const b = buf[i]!;
    if (b >= 0x80) {
      text = utf8.decode(buf.subarray(at, at + n));
      break;
    }
    text += String.fromCharCode(b);
  }
  shortTextLength[slot] = n;
  for (let i = 0; i < n; i++) shortTextBytes[from + i] = buf[at + i]!;
  shortTexts[slot] = text;
  return text;
}

/** What {@link readOperand} found: the kinds of {@link Operand.kind}. */
export const REF = 0; // BINGET, LONG_BINGET: the memo index in `index`
export const INT = 1; // BININT1, BININT2, BININT: the int in `index`
export const VALUE = 2; // LONG1, BINFLOAT, NONE, NEWTRUE, NEWFALSE: `value`
export const TEXT = 3; // SHORT_BINUNICODE: `value`; `memoized` when a MEMOIZE follows
export const LIST = 4; // EMPTY_LIST MEMOIZE; `memoized` when a MARK follows (items next)
export const DICT = 5; // EMPTY_DICT MEMOIZE MARK: the dict's items next
export const SETITEMS = 6;
export const APPENDS = 7;

/** The opcode {@link readOperand} decoded (one object, reused). */
export interface Operand {
  kind: number;
  /** A memo reference's index (negative past 2^31: no slot of a memo within its limit), or an int. */
  index: number;
  /** Another scalar's or a string's value. */
  value: unknown;
  /** A string memoized after it; a list with items after it. */
  memoized: boolean;
}

/** A reusable {@link Operand}. */
export function operand(): Operand {
  return { kind: -1, index: 0, value: undefined, memoized: false };
}

/**
 * The one decoding of the opcodes the fast paths read (the kinds above) into `out`; returns where
 * the next opcode starts, or -1 when it is another opcode or `end` cuts it. It decides nothing:
 * the fast path that called it says whether the opcode fits its shape.
 */
export function readOperand(
  buf: Uint8Array,
  view: DataView,
  q: number,
  end: number,
  out: Operand,
): number {
  // Small enough to be inlined where it is called: the most frequent opcodes here (a big
  // pickle's memo references first), the rest in readOther.
  if (q >= end) return -1;
  const op = buf[q]!;
  if (op === 0x6a || op === 0x4a) {
    // LONG_BINGET, BININT
    if (q + 5 > end) return -1;
    out.kind = op === 0x6a ? REF : INT;
    out.index = view.getInt32(q + 1, true);
    return q + 5;
  }
  if (op === 0x68) {
    // BINGET
    if (q + 2 > end) return -1;
    out.kind = REF;
    out.index = buf[q + 1]!;
    return q + 2;
  }
  if (op === 0x4b || op === 0x4d) {
    // BININT1, BININT2
    const next = op === 0x4b ? q + 2 : q + 3;
    if (next > end) return -1;
    out.kind = INT;
    out.index = op === 0x4b ? buf[q + 1]! : buf[q + 1]! | (buf[q + 2]! << 8);
    return next;
  }
  if (op === 0x75 || op === 0x65) {
    out.kind = op === 0x75 ? SETITEMS : APPENDS;
    return q + 1;
  }
  if (op === 0x7d) {
    // EMPTY_DICT MEMOIZE MARK
    if (q + 3 > end || buf[q + 1] !== 0x94 || buf[q + 2] !== 0x28) return -1;
    out.kind = DICT;
    return q + 3;
  }
  return readOther(buf, view, q, end, out);
}

/** {@link readOperand} of an opcode that is no memo reference and no int, or of a `FRAME`. */
function readOther(buf: Uint8Array, view: DataView, q: number, end: number, out: Operand): number {
  const op = buf[q]!;
  if (op === 0x95) {
    // FRAME: its length is a hint the machine skips too (protocol 4 puts one every 64 KiB, in the
    // middle of a list as often as not); the opcode after it is the one read.
    return q + 9 > end ? -1 : readOperand(buf, view, q + 9, end, out);
  }
  if (op === 0x8c) {
    // SHORT_BINUNICODE, and the MEMOIZE after it
    const next = q + 2 + (buf[q + 1] ?? 0);
    if (q + 2 > end || next > end) return -1;
    out.kind = TEXT;
    out.value = decodeUtf8(buf, q + 2, buf[q + 1]!);
    out.memoized = next < end && buf[next] === 0x94;
    return out.memoized ? next + 1 : next;
  }
  if (op === 0x5d) {
    // EMPTY_LIST MEMOIZE, then a MARK or not
    if (q + 3 > end || buf[q + 1] !== 0x94) return -1;
    out.memoized = buf[q + 2] === 0x28;
    out.kind = LIST;
    return out.memoized ? q + 3 : q + 2;
  }
  out.kind = VALUE;
  if (op === 0x4e || op === 0x88 || op === 0x89) {
    out.value = op === 0x4e ? null : op === 0x88;
    return q + 1;
  }
  if (op === 0x47) {
    if (q + 9 > end) return -1;
    out.value = view.getFloat64(q + 1, false);
    return q + 9;
  }
  if (op !== 0x8a || q + 2 > end || q + 2 + buf[q + 1]! > end) return -1;
  out.value = decodeLong(buf, q + 2, buf[q + 1]!);
  return q + 2 + buf[q + 1]!;
}

/** Two's complement little-endian integer of `n` bytes at `at` (`LONG1`/`LONG4`). */
export function decodeLong(buf: Uint8Array, at: number, n: number): number | bigint {
  if (n === 0) return 0;
  const top = buf[at + n - 1]!;
  // Up to 52 bits, exact in a double: addresses (6 bytes) and µs times (7 bytes) of a snapshot.
  if (n <= 6 || (n === 7 && top < 0x10)) {
    let value = 0;
    for (let i = at + n - 1; i >= at; i--) value = value * 256 + buf[i]!;
    return top >= 0x80 ? value - 2 ** (8 * n) : value;
  }
  let value = 0n;
  for (let i = at + n - 1; i >= at; i--) value = (value << 8n) | BigInt(buf[i]!);
  if (top >= 0x80) value -= 1n << BigInt(8 * n);
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}
