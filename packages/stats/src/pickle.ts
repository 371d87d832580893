/**
 * A small Python pickle writer (protocol 4 header, no framing) for snapshot files that Python's
 * `pickle.load` and PyTorch's memory_viz page both read.
 *
 * It writes only the opcodes memory_viz's own JavaScript unpickler understands: `PROTO`, `NONE`,
 * `NEWTRUE`/`NEWFALSE`, `BININT1`/`BININT2`/`BININT`, `LONG1` (integers of any size, two's
 * complement, little-endian), `BINFLOAT`, `SHORT_BINUNICODE`/`BINUNICODE`, `EMPTY_LIST` + `APPENDS`,
 * `EMPTY_DICT` + `SETITEMS`, the tuple opcodes, `MEMOIZE`/`BINGET`/`LONG_BINGET` (repeated strings
 * such as dictionary keys are written once) and `STOP`.
 *
 * Numbers that are integers become Python `int`; other numbers become `float` (wrap a value with
 * {@link pickleFloat} to force a float). `bigint` is an `int` of any size. Object keys are strings;
 * `undefined` values are left out, as in JSON.
 */

/** A Python tuple. */
export class PickleTuple {
  constructor(readonly items: readonly PickleValue[]) {}
}

/** A number written as a Python `float` even when it is integral. */
export class PickleFloat {
  constructor(readonly value: number) {}
}

/** Values the writer understands. */
export type PickleValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | PickleTuple
  | PickleFloat
  | readonly PickleValue[]
  | { readonly [key: string]: PickleValue | undefined };

/** A Python tuple of `items`. */
export function pickleTuple(...items: PickleValue[]): PickleTuple {
  return new PickleTuple(items);
}

/** `value` as a Python float. */
export function pickleFloat(value: number): PickleFloat {
  return new PickleFloat(value);
}

const Op = {
  PROTO: 0x80,
  STOP: 0x2e, // '.'
  NONE: 0x4e, // 'N'
  NEWTRUE: 0x88,
  NEWFALSE: 0x89,
  BININT: 0x4a, // 'J'
  BININT1: 0x4b, // 'K'
  BININT2: 0x4d, // 'M'
  LONG1: 0x8a,
  BINFLOAT: 0x47, // 'G'
  SHORT_BINUNICODE: 0x8c,
  BINUNICODE: 0x58, // 'X'
  EMPTY_LIST: 0x5d, // ']'
  APPENDS: 0x65, // 'e'
  EMPTY_DICT: 0x7d, // '}'
  SETITEMS: 0x75, // 'u'
  MARK: 0x28, // '('
  EMPTY_TUPLE: 0x29, // ')'
  TUPLE: 0x74, // 't'
  TUPLE1: 0x85,
  TUPLE2: 0x86,
  TUPLE3: 0x87,
  MEMOIZE: 0x94,
  BINGET: 0x68, // 'h'
  LONG_BINGET: 0x6a, // 'j'
} as const;

/** Protocol written in the header. */
const PROTOCOL = 4;
/** Items per APPENDS/SETITEMS batch, as Python's own pickler does. */
const BATCH = 1000;
/** Strings at most this long are memoized (longer ones are rarely repeated). */
const MEMO_MAX_LENGTH = 64;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

class ByteWriter {
  private bytes = new Uint8Array(1 << 16);
  private view = new DataView(this.bytes.buffer);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
    this.view = new DataView(next.buffer);
  }

  byte(value: number): void {
    this.reserve(1);
    this.bytes[this.length++] = value;
  }

  uint16(value: number): void {
    this.reserve(2);
    this.view.setUint16(this.length, value, true);
    this.length += 2;
  }

  int32(value: number): void {
    this.reserve(4);
    this.view.setInt32(this.length, value, true);
    this.length += 4;
  }

  uint32(value: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, value, true);
    this.length += 4;
  }

  float64BigEndian(value: number): void {
    this.reserve(8);
    this.view.setFloat64(this.length, value, false);
    this.length += 8;
  }

  raw(data: Uint8Array): void {
    this.reserve(data.length);
    this.bytes.set(data, this.length);
    this.length += data.length;
  }

  result(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}

/** Two's-complement little-endian bytes of `value`, as few as represent it (Python's `encode_long`). */
function longBytes(value: bigint): Uint8Array {
  if (value === 0n) return new Uint8Array(0);
  const out: number[] = [];
  let v = value;
  for (;;) {
    const byte = Number(v & 0xffn);
    out.push(byte);
    v >>= 8n; // arithmetic shift: stays negative for negative values
    const signBit = (byte & 0x80) !== 0;
    if ((v === 0n && !signBit) || (v === -1n && signBit)) break;
  }
  return Uint8Array.from(out);
}

class Pickler {
  private readonly out = new ByteWriter();
  private readonly memo = new Map<string, number>();
  private readonly encoder = new TextEncoder();

  run(value: PickleValue): Uint8Array {
    this.out.byte(Op.PROTO);
    this.out.byte(PROTOCOL);
    this.value(value);
    this.out.byte(Op.STOP);
    return this.out.result();
  }

  private value(value: PickleValue | undefined): void {
    const out = this.out;
    if (value === null || value === undefined) out.byte(Op.NONE);
    else if (value === true) out.byte(Op.NEWTRUE);
    else if (value === false) out.byte(Op.NEWFALSE);
    else if (typeof value === 'number') this.number(value);
    else if (typeof value === 'bigint') this.integer(value);
    else if (typeof value === 'string') this.string(value);
    else if (value instanceof PickleFloat) this.float(value.value);
    else if (value instanceof PickleTuple) this.tuple(value.items);
    else if (Array.isArray(value)) this.list(value as readonly PickleValue[]);
    else this.dict(value as { readonly [key: string]: PickleValue | undefined });
  }

  private number(value: number): void {
    if (!Number.isInteger(value)) {
      this.float(value);
      return;
    }
    const out = this.out;
    if (value >= 0 && value <= 0xff) {
      out.byte(Op.BININT1);
      out.byte(value);
    } else if (value >= 0 && value <= 0xffff) {
      out.byte(Op.BININT2);
      out.uint16(value);
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
      out.byte(Op.BININT);
      out.int32(value);
    } else {
      this.integer(BigInt(value));
    }
  }

  private integer(value: bigint): void {
    if (value >= BigInt(INT32_MIN) && value <= BigInt(INT32_MAX)) {
      this.number(Number(value));
      return;
    }
    const bytes = longBytes(value);
    if (bytes.length > 0xff) throw new RangeError('integer too large to pickle with LONG1');
    this.out.byte(Op.LONG1);
    this.out.byte(bytes.length);
    this.out.raw(bytes);
  }

  private float(value: number): void {
    this.out.byte(Op.BINFLOAT);
    this.out.float64BigEndian(value);
  }

  private string(value: string): void {
    const out = this.out;
    const memoized = this.memo.get(value);
    if (memoized !== undefined) {
      if (memoized <= 0xff) {
        out.byte(Op.BINGET);
        out.byte(memoized);
      } else {
        out.byte(Op.LONG_BINGET);
        out.uint32(memoized);
      }
      return;
    }
    const bytes = this.encoder.encode(value);
    if (bytes.length <= 0xff) {
      out.byte(Op.SHORT_BINUNICODE);
      out.byte(bytes.length);
    } else {
      out.byte(Op.BINUNICODE);
      out.uint32(bytes.length);
    }
    out.raw(bytes);
    if (value.length <= MEMO_MAX_LENGTH) {
      out.byte(Op.MEMOIZE);
      this.memo.set(value, this.memo.size);
    }
  }

  private tuple(items: readonly PickleValue[]): void {
    const out = this.out;
    switch (items.length) {
      case 0:
        out.byte(Op.EMPTY_TUPLE);
        return;
      case 1:
      case 2:
      case 3:
        for (const item of items) this.value(item);
        out.byte(items.length === 1 ? Op.TUPLE1 : items.length === 2 ? Op.TUPLE2 : Op.TUPLE3);
        return;
      default:
        out.byte(Op.MARK);
        for (const item of items) this.value(item);
        out.byte(Op.TUPLE);
    }
  }

  private list(items: readonly PickleValue[]): void {
    const out = this.out;
    out.byte(Op.EMPTY_LIST);
    for (let start = 0; start < items.length; start += BATCH) {
      out.byte(Op.MARK);
      const end = Math.min(items.length, start + BATCH);
      for (let i = start; i < end; i++) this.value(items[i]);
      out.byte(Op.APPENDS);
    }
  }

  private dict(entries: { readonly [key: string]: PickleValue | undefined }): void {
    const out = this.out;
    out.byte(Op.EMPTY_DICT);
    const keys = Object.keys(entries).filter((key) => entries[key] !== undefined);
    for (let start = 0; start < keys.length; start += BATCH) {
      out.byte(Op.MARK);
      const end = Math.min(keys.length, start + BATCH);
      for (let i = start; i < end; i++) {
        const key = keys[i]!;
        this.string(key);
        this.value(entries[key]);
      }
      out.byte(Op.SETITEMS);
    }
  }
}

/** Serialises `value` as a Python pickle (see the module comment for the mapping). */
export function pickle(value: PickleValue): Uint8Array {
  return new Pickler().run(value);
}
