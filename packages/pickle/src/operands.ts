/**
 * The operands of pickle opcodes, decoded from a buffer: strings (a short one seen lately is the
 * very string again), little-endian ints of one, two or four bytes, and `LONG1`/`LONG4` integers,
 * exact as numbers up to 52 bits.
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

/** Bytes of the operand of `op` when it is `BININT1`, `BININT2` or `BININT`; else 0. */
export function intWidth(op: number): number {
  return op === 0x4b ? 1 : op === 0x4d ? 2 : op === 0x4a ? 4 : 0;
}

/** The operand of the int opcode at `q`, of `width` bytes (see {@link intWidth}). */
export function intAt(buf: Uint8Array, view: DataView, q: number, width: number): number {
  return width === 1
    ? buf[q + 1]!
    : width === 2
      ? buf[q + 1]! | (buf[q + 2]! << 8)
      : view.getInt32(q + 1, true);
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
