/**
 * The bytes of a pickle as the reader consumes them: the position, little-endian operands, text
 * lines, and errors that carry the byte offset of the opcode at fault.
 */
import { TraceFormatError } from '../errors';

const latin1 = new TextDecoder('latin1');

/** A cursor over a pickle's bytes. */
export class PickleInput {
  /** Next byte to read. */
  at = 0;
  /** Offset of the opcode being read, for errors. */
  opAt = 0;
  private readonly view: DataView;

  constructor(
    readonly bytes: Uint8Array,
    private readonly name: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Throws a {@link TraceFormatError} at the current opcode. */
  fail(expected: string, found: string): never {
    throw new TraceFormatError(this.name, this.opAt, expected, found, 'byte');
  }

  /** Fails unless `n` more bytes follow. */
  need(n: number): void {
    if (this.at + n > this.bytes.length) {
      this.fail(`${n} more byte(s) of operand`, 'the end of the file (truncated pickle)');
    }
  }

  /** The next opcode, recording its offset; fails at the end of the file. */
  opcode(): number {
    this.opAt = this.at;
    if (this.at >= this.bytes.length) {
      this.fail('an opcode (STOP ends a pickle)', 'the end of the file (truncated pickle)');
    }
    return this.bytes[this.at++]!;
  }

  u8(): number {
    this.need(1);
    return this.bytes[this.at++]!;
  }

  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.at, true);
    this.at += 2;
    return v;
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.at, true);
    this.at += 4;
    return v;
  }

  /** An unsigned 64-bit length, which must be below 2^53. */
  u64(): number {
    this.need(8);
    const v = this.view.getBigUint64(this.at, true);
    this.at += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail('a length below 2^53', String(v));
    return Number(v);
  }

  i32(): number {
    this.need(4);
    const v = this.view.getInt32(this.at, true);
    this.at += 4;
    return v;
  }

  /** A big-endian double (`BINFLOAT`). */
  f64(): number {
    this.need(8);
    const v = this.view.getFloat64(this.at, false);
    this.at += 8;
    return v;
  }

  /** The next `n` bytes, as a view into the pickle. */
  take(n: number): Uint8Array {
    this.need(n);
    const slice = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return slice;
  }

  /** Text up to the next newline (protocol 0 operands), as Latin-1. */
  line(): string {
    const end = this.bytes.indexOf(0x0a, this.at);
    if (end < 0) this.fail('a newline-terminated operand', 'the end of the file');
    const text = latin1.decode(this.bytes.subarray(this.at, end));
    this.at = end + 1;
    return text;
  }
}
