/**
 * A streaming writer of Python pickles, protocol 4, that gives the bytes CPython's own pickler
 * (`_pickle.c`, what `pickle.dump(obj, f, protocol=4)` runs) gives for the same objects: the same
 * opcodes, the same memo numbering and the same frames.
 *
 * The caller walks its objects in CPython's order and tells the writer what each one is; the
 * writer does not hold the objects. What CPython decides from object identity (a second reference
 * to a memoized object is a `BINGET`), the caller decides: each method that memoizes returns the
 * memo index, and {@link PickleWriter.get} writes a reference to it.
 *
 * ```
 *  PROTO 4 │ FRAME n │ opcodes … (n bytes) │ FRAME n │ … STOP
 *          └─ a frame closes at the first object boundary past 64 KiB
 * ```
 *
 * CPython's rules, mirrored here:
 * - **Frames.** A frame opens with the first byte written after the previous one closed, and
 *   closes when an object's `save()` begins and the frame holds at least 64 KiB. The last frame
 *   closes after `STOP`; a frame of under 4 bytes loses its header. A `str` of 64 KiB or more is
 *   written outside any frame.
 * - **Memo.** `str`, `bytes`, `list`, `dict` and non-empty tuples are memoized (`MEMOIZE`) as
 *   they are written; lists and dicts right after their opening opcode. `None`, booleans, `int`
 *   and `float` never are.
 * - **Batches** are {@link ItemBatches}.
 *
 * Output is handed out in chunks of the caller's reusable buffer: {@link PickleWriter.readyBytes}
 * says how much is final (everything before the open frame), {@link PickleWriter.ready} views it,
 * and {@link PickleWriter.release} drops it once the consumer is done with it.
 */

/** Protocol 4 opcodes, by byte. */
const MARK = 0x28;
const EMPTY_TUPLE = 0x29;
const STOP = 0x2e;
const BINFLOAT = 0x47;
const BININT = 0x4a;
const BININT1 = 0x4b;
const BININT2 = 0x4d;
const NONE = 0x4e;
const BINUNICODE = 0x58;
const EMPTY_LIST = 0x5d;
const APPEND = 0x61;
const APPENDS = 0x65;
const BINGET = 0x68;
const LONG_BINGET = 0x6a;
const SETITEM = 0x73;
const SETITEMS = 0x75;
const TUPLE = 0x74;
const EMPTY_DICT = 0x7d;
const SHORT_BINBYTES = 0x43;
const BINBYTES = 0x42;
const PROTO = 0x80;
const TUPLE1 = 0x85;
const NEWTRUE = 0x88;
const NEWFALSE = 0x89;
const LONG1 = 0x8a;
const LONG4 = 0x8b;
const SHORT_BINUNICODE = 0x8c;
const MEMOIZE = 0x94;
const FRAME = 0x95;

/** CPython closes a frame at the first object boundary once it holds this many bytes. */
const FRAME_SIZE_TARGET = 64 * 1024;
/** `FRAME` and its 8-byte length. */
const FRAME_HEADER_SIZE = 9;
/** A closed frame shorter than this is written without its header. */
const FRAME_SIZE_MIN = 4;
/** Items per `APPENDS`/`SETITEMS`, CPython's `BATCHSIZE`. */
export const BATCH_SIZE = 1000;
/** The largest opcode with fixed-size operands (`LONG_BINGET`, `BINFLOAT`, a `LONG1` of 8 bytes). */
const MAX_FIXED_OP = 16;
/** Strings up to this many UTF-16 units are encoded by hand (faster than `encodeInto` when short). */
const SHORT_STRING = 48;
const TWO_POW_32 = 0x1_0000_0000;

const encoder = new TextEncoder();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Writes a Python pickle, protocol 4, byte for byte as CPython does. See the file comment for the
 * rules; {@link start} and {@link finish} bracket one pickle.
 */
export class PickleWriter {
  private buffer: Uint8Array;
  private view: DataView;
  /** End of what has been written. */
  private position = 0;
  /** Where the open frame's header is, or -1 when no frame is open. */
  private frameStart = -1;
  /** Whether frames are in force (after `PROTO`, except around a large string). */
  private framing = false;
  private memoCount = 0;
  /** Bytes handed out through {@link release}. */
  private released = 0;

  /** @param capacity - initial buffer size in bytes; it grows when one frame needs more. */
  constructor(capacity = 1 << 20) {
    this.buffer = new Uint8Array(Math.max(capacity, 4 * FRAME_SIZE_TARGET));
    this.view = new DataView(this.buffer.buffer);
  }

  /** Objects memoized so far: the index the next one gets. */
  get memoSize(): number {
    return this.memoCount;
  }

  /** Bytes written so far, final or not. */
  get bytesWritten(): number {
    return this.released + this.position;
  }

  /** Bytes that are final and not yet released: everything before the open frame. */
  get readyBytes(): number {
    return this.frameStart < 0 ? this.position : this.frameStart;
  }

  /** A view of the final bytes; valid until the next call that writes or releases. */
  ready(): Uint8Array {
    return this.buffer.subarray(0, this.readyBytes);
  }

  /** Drops the final bytes (after the consumer is done with {@link ready}'s view). */
  release(): void {
    const done = this.readyBytes;
    if (done === 0) return;
    this.buffer.copyWithin(0, done, this.position);
    this.position -= done;
    if (this.frameStart >= 0) this.frameStart -= done;
    this.released += done;
  }

  /** `PROTO 4`; frames start with the next byte. */
  start(): void {
    this.room(2);
    this.buffer[this.position++] = PROTO;
    this.buffer[this.position++] = 4;
    this.framing = true;
  }

  /** `STOP`, and the last frame closed: every byte is final after this. */
  finish(): void {
    this.op(STOP);
    this.commitFrame();
    this.framing = false;
  }

  /** `None`. */
  none(): void {
    this.boundary();
    this.op(NONE);
  }

  /** `True` or `False`. */
  bool(value: boolean): void {
    this.boundary();
    this.op(value ? NEWTRUE : NEWFALSE);
  }

  /** An `int`: `BININT1`/`BININT2`/`BININT` when it fits 32 signed bits, else `LONG1`/`LONG4`. */
  int(value: number | bigint): void {
    this.boundary();
    if (typeof value === 'bigint') {
      if (value >= -0x8000_0000n && value <= 0x7fff_ffffn) this.smallInt(Number(value));
      else this.long(value);
    } else if (value >= -0x8000_0000 && value <= 0x7fff_ffff) {
      this.smallInt(value);
    } else if (value > 0 && value <= Number.MAX_SAFE_INTEGER) {
      this.positiveLong(value);
    } else {
      this.long(BigInt(value));
    }
  }

  /** A `float` (`BINFLOAT`, big-endian). */
  float(value: number): void {
    this.boundary();
    this.room(9);
    this.buffer[this.position] = BINFLOAT;
    this.view.setFloat64(this.position + 1, value, false);
    this.position += 9;
  }

  /** A new `str` object, memoized; returns its memo index. */
  str(value: string): number {
    this.boundary();
    const length = value.length;
    if (length <= SHORT_STRING && this.shortAscii(value, length)) return this.memoize();
    this.encodeString(value);
    return this.memoize();
  }

  /** A new `bytes` object, memoized; returns its memo index. */
  bytes(value: Uint8Array): number {
    this.boundary();
    if (value.length >= FRAME_SIZE_TARGET) this.outsideFrames(BINBYTES, value);
    else this.counted(SHORT_BINBYTES, BINBYTES, value);
    return this.memoize();
  }

  /** A reference to the object memoized as `index` (`BINGET`, or `LONG_BINGET` from 256). */
  get(index: number): void {
    this.boundary();
    this.room(5);
    const buffer = this.buffer;
    let at = this.position;
    if (index < 256) {
      buffer[at++] = BINGET;
      buffer[at++] = index;
    } else {
      buffer[at++] = LONG_BINGET;
      this.view.setUint32(at, index, true);
      at += 4;
    }
    this.position = at;
  }

  /** `EMPTY_DICT`, memoized; returns its memo index. Its items follow in {@link ItemBatches}. */
  emptyDict(): number {
    this.boundary();
    this.op(EMPTY_DICT);
    return this.memoize();
  }

  /** `EMPTY_LIST`, memoized; returns its memo index. Its items follow in {@link ItemBatches}. */
  emptyList(): number {
    this.boundary();
    this.op(EMPTY_LIST);
    return this.memoize();
  }

  /** The start of a tuple of `count` items: an object boundary, and `MARK` past 3 items. */
  tupleStart(count: number): void {
    this.boundary();
    if (count > 3) this.op(MARK);
  }

  /**
   * The end of a tuple of `count` items written since {@link tupleStart}: `EMPTY_TUPLE` (not
   * memoized; returns -1), `TUPLE1`–`TUPLE3` or `TUPLE`, memoized; returns its memo index.
   */
  tupleEnd(count: number): number {
    if (count === 0) {
      this.op(EMPTY_TUPLE);
      return -1;
    }
    this.op(count <= 3 ? TUPLE1 + count - 1 : TUPLE);
    return this.memoize();
  }

  /** `MARK`. */
  mark(): void {
    this.op(MARK);
  }

  /** `APPEND` (a list of one item) or `APPENDS`. */
  appends(one: boolean): void {
    this.op(one ? APPEND : APPENDS);
  }

  /** `SETITEM` (a dict of one item) or `SETITEMS`. */
  setitems(one: boolean): void {
    this.op(one ? SETITEM : SETITEMS);
  }

  /** Where an object's `save()` begins: CPython closes the frame here once it is full. */
  private boundary(): void {
    if (
      this.frameStart >= 0 &&
      this.position - this.frameStart - FRAME_HEADER_SIZE >= FRAME_SIZE_TARGET
    ) {
      this.commitFrame();
    }
  }

  private commitFrame(): void {
    const start = this.frameStart;
    if (start < 0) return;
    const length = this.position - start - FRAME_HEADER_SIZE;
    if (length >= FRAME_SIZE_MIN) {
      this.buffer[start] = FRAME;
      this.view.setUint32(start + 1, length % TWO_POW_32, true);
      this.view.setUint32(start + 5, Math.floor(length / TWO_POW_32), true);
    } else {
      this.buffer.copyWithin(start, start + FRAME_HEADER_SIZE, this.position);
      this.position -= FRAME_HEADER_SIZE;
    }
    this.frameStart = -1;
  }

  private memoize(): number {
    this.op(MEMOIZE);
    return this.memoCount++;
  }

  private op(code: number): void {
    this.room(1);
    this.buffer[this.position++] = code;
  }

  /** Space for `bytes` more bytes, opening a frame first when none is open. */
  private room(bytes: number): void {
    if (this.frameStart < 0 && this.framing) {
      this.frameStart = this.position;
      this.position += FRAME_HEADER_SIZE;
    }
    if (this.position + bytes > this.buffer.length) this.grow(bytes);
  }

  private grow(bytes: number): void {
    let size = this.buffer.length * 2;
    while (size < this.position + bytes) size *= 2;
    const bigger = new Uint8Array(size);
    bigger.set(this.buffer.subarray(0, this.position));
    this.buffer = bigger;
    this.view = new DataView(bigger.buffer);
  }

  private smallInt(value: number): void {
    this.room(5);
    const buffer = this.buffer;
    const at = this.position;
    if (value >= 0 && value < 0x100) {
      buffer[at] = BININT1;
      buffer[at + 1] = value;
      this.position = at + 2;
    } else if (value >= 0 && value < 0x1_0000) {
      buffer[at] = BININT2;
      buffer[at + 1] = value & 0xff;
      buffer[at + 2] = value >>> 8;
      this.position = at + 3;
    } else {
      buffer[at] = BININT;
      this.view.setInt32(at + 1, value, true);
      this.position = at + 5;
    }
  }

  /** `LONG1` of a positive safe integer above 2^31: its bytes, plus a 0 when the top bit is set. */
  private positiveLong(value: number): void {
    this.room(MAX_FIXED_OP);
    const buffer = this.buffer;
    const at = this.position + 2;
    // In 32-bit halves, so the byte operators act on words, never on the whole value.
    const low = value % TWO_POW_32;
    let high = (value - low) / TWO_POW_32;
    buffer[at] = low & 0xff;
    buffer[at + 1] = (low >>> 8) & 0xff;
    buffer[at + 2] = (low >>> 16) & 0xff;
    let top = low >>> 24;
    buffer[at + 3] = top;
    let count = 4;
    while (high > 0) {
      top = high & 0xff;
      buffer[at + count++] = top;
      high >>>= 8;
    }
    if (top >= 0x80) buffer[at + count++] = 0;
    buffer[at - 2] = LONG1;
    buffer[at - 1] = count;
    this.position = at + count;
  }

  /** `LONG1`/`LONG4` of any integer: little-endian two's complement, as short as CPython makes it. */
  private long(value: bigint): void {
    // CPython takes (bits of |value|) / 8 + 1 bytes, then drops a redundant 0xff of a negative.
    const bits = (value < 0n ? -value : value).toString(2).length;
    const bytes: number[] = [];
    let rest = value;
    for (let i = Math.floor(bits / 8); i >= 0; i--) {
      bytes.push(Number(rest & 0xffn));
      rest >>= 8n;
    }
    const length = bytes.length;
    if (value < 0n && length > 1 && bytes[length - 1] === 0xff && bytes[length - 2]! >= 0x80) {
      bytes.pop();
    }
    this.counted(LONG1, LONG4, Uint8Array.from(bytes));
  }

  /** An opcode with a 1-byte length when `data` is under 256 bytes, else one with a 4-byte length. */
  private counted(shortCode: number, longCode: number, data: Uint8Array): void {
    const length = data.length;
    this.room(length + 5);
    if (length < 256) {
      this.buffer[this.position++] = shortCode;
      this.buffer[this.position++] = length;
    } else {
      this.buffer[this.position] = longCode;
      this.view.setUint32(this.position + 1, length, true);
      this.position += 5;
    }
    this.buffer.set(data, this.position);
    this.position += length;
  }

  /** `SHORT_BINUNICODE` of an ASCII string, by hand; false (and nothing written) otherwise. */
  private shortAscii(value: string, length: number): boolean {
    this.room(length + 2);
    const buffer = this.buffer;
    const at = this.position + 2;
    for (let i = 0; i < length; i++) {
      const code = value.charCodeAt(i);
      if (code >= 0x80) return false;
      buffer[at + i] = code;
    }
    buffer[at - 2] = SHORT_BINUNICODE;
    buffer[at - 1] = length;
    this.position = at + length;
    return true;
  }

  /** `SHORT_BINUNICODE` or `BINUNICODE` of any string, UTF-8 with surrogates passed through. */
  private encodeString(value: string): void {
    const most = value.length * 3;
    if (most >= FRAME_SIZE_TARGET) {
      const data = utf8SurrogatePass(value);
      if (data.length >= FRAME_SIZE_TARGET) {
        this.outsideFrames(BINUNICODE, data);
        return;
      }
    }
    this.room(most + 5);
    // Encode behind the longest header, then move the bytes up when the short one will do.
    const at = this.position;
    const { written } = encoder.encodeInto(value, this.buffer.subarray(at + 5, at + 5 + most));
    if (written !== value.length && LONE_SURROGATE.test(value)) {
      this.buffer.set(utf8SurrogatePass(value), at + 5);
    }
    if (written < 256) {
      this.buffer.copyWithin(at + 2, at + 5, at + 5 + written);
      this.buffer[at] = SHORT_BINUNICODE;
      this.buffer[at + 1] = written;
      this.position = at + 2 + written;
    } else {
      this.buffer[at] = BINUNICODE;
      this.view.setUint32(at + 1, written, true);
      this.position = at + 5 + written;
    }
  }

  /** A `str` or `bytes` of 64 KiB or more: the open frame closes and the data goes outside frames. */
  private outsideFrames(code: number, data: Uint8Array): void {
    this.commitFrame();
    this.framing = false;
    this.counted(code, code, data);
    this.framing = true;
  }
}

/** UTF-8 as Python's `surrogatepass` writes it: a lone surrogate becomes its own 3 bytes. */
function utf8SurrogatePass(value: string): Uint8Array {
  if (!LONE_SURROGATE.test(value)) return encoder.encode(value);
  const out: number[] = [];
  for (let i = 0; i < value.length; i++) {
    let code = value.charCodeAt(i);
    const next = value.charCodeAt(i + 1);
    if (code >= 0xd800 && code < 0xdc00 && next >= 0xdc00 && next < 0xe000) {
      code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
      i++;
    }
    if (code < 0x80) out.push(code);
    else if (code < 0x800) out.push(0xc0 | (code >> 6), 0x80 | (code & 0x3f));
    else if (code < 0x10000) {
      out.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
    } else {
      out.push(
        0xf0 | (code >> 18),
        0x80 | ((code >> 12) & 0x3f),
        0x80 | ((code >> 6) & 0x3f),
        0x80 | (code & 0x3f),
      );
    }
  }
  return Uint8Array.from(out);
}

/**
 * CPython's batches of a list's or dict's items: a container of one item ends with `APPEND` or
 * `SETITEM`; otherwise its items go in `MARK` … `APPENDS`/`SETITEMS` groups of up to 1000. A dict
 * whose size is a multiple of 1000 gets one more, empty group (`batch_dict_exact` loops while the
 * last group was full), a list does not.
 *
 * Call {@link before} before each item (a dict item is its key and its value) and {@link after}
 * after it; the total must be known from the start.
 */
export class ItemBatches {
  private inGroup = 0;
  private done = 0;

  constructor(
    private readonly writer: PickleWriter,
    private readonly total: number,
    private readonly dict: boolean,
  ) {}

  before(): void {
    if (this.inGroup === 0 && this.total !== 1) this.writer.mark();
  }

  after(): void {
    this.done++;
    if (this.total === 1) {
      this.close(true);
    } else if (++this.inGroup === BATCH_SIZE || this.done === this.total) {
      this.close(false);
      this.inGroup = 0;
      if (this.dict && this.done === this.total && this.total % BATCH_SIZE === 0) {
        this.writer.mark();
        this.close(false);
      }
    }
  }

  private close(one: boolean): void {
    if (this.dict) this.writer.setitems(one);
    else this.writer.appends(one);
  }
}
