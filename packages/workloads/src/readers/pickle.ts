/**
 * A small Python unpickler for plain data: what `pickle.dump` writes for dictionaries, lists,
 * tuples, strings, bytes, numbers, booleans and `None`, in protocols 2 to 5. That is every opcode a
 * PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot()`) uses; anything that would run
 * Python code (`GLOBAL`, `REDUCE`, `BUILD`, ...) is refused, so reading an untrusted file is safe.
 *
 * ```
 *  bytes ─► opcode loop ─► stack of values, MARK positions, memo table ─► STOP: the top value
 * ```
 *
 * Python values become: dict → plain object (keys converted to strings; `__proto__` is safe because
 * objects are created without a prototype), list and tuple → array, int → number (bigint beyond
 * 2^53), float → number, str → string, bytes → Uint8Array, None → null.
 *
 * Every error is a {@link TraceFormatError} with the byte offset of the opcode at fault and what was
 * expected there.
 */
import { TraceFormatError } from '../errors';

/** A value read from a pickle. */
export type UnpickledValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | UnpickledValue[]
  | { [key: string]: UnpickledValue };

/** Options of {@link unpickle}. */
export interface UnpickleOptions {
  /** Label for error messages. @defaultValue 'pickle' */
  readonly name?: string;
  /** Limits on what a pickle may build. @defaultValue {@link DEFAULT_UNPICKLE_LIMITS} */
  readonly limits?: Partial<UnpickleLimits>;
}

/**
 * What one pickle may build. The memo lets a few bytes refer to a big value again and again, so a
 * small file can stand for an enormous one: these limits bound both what is held (items) and what
 * a reader that walks the value would visit (the size after memo expansion).
 */
export interface UnpickleLimits {
  /** Deepest nesting of lists, tuples and dicts. */
  readonly maxDepth: number;
  /** Lists, tuples, sets and dicts created. */
  readonly maxContainers: number;
  /** Values held at once: items of every container plus the stack. */
  readonly maxItems: number;
  /** Sum over every container of its items, each counted with everything under it. */
  readonly maxExpandedSize: number;
  /** Bytes of one integer (`LONG1`, `LONG4`) or digits of a decimal one (`INT`, `LONG`). */
  readonly maxIntegerBytes: number;
}

/**
 * The limits of {@link unpickle} unless told otherwise: a memory snapshot of 128 MiB (the default
 * input limit) needs about 2 M containers, 15 M values held and 60 M after memo expansion (a
 * snapshot of 3.7 MB: 52,221, 415,152 and 1,610,105), and these keep a hostile pickle near 1 GB.
 */
export const DEFAULT_UNPICKLE_LIMITS: UnpickleLimits = Object.freeze({
  maxDepth: 1000,
  maxContainers: 4_000_000,
  maxItems: 24_000_000,
  maxExpandedSize: 192_000_000,
  maxIntegerBytes: 1024,
});

/** The opcodes of protocols 0–5 that carry plain data, by byte value. */
const Op = {
  MARK: 0x28, // (
  STOP: 0x2e, // .
  POP: 0x30, // 0
  POP_MARK: 0x31, // 1
  DUP: 0x32, // 2
  FLOAT: 0x46, // F
  INT: 0x49, // I
  BININT: 0x4a, // J
  BININT1: 0x4b, // K
  LONG: 0x4c, // L
  BININT2: 0x4d, // M
  NONE: 0x4e, // N
  BINUNICODE: 0x58, // X
  BINBYTES: 0x42, // B
  SHORT_BINBYTES: 0x43, // C
  BINSTRING: 0x54, // T
  SHORT_BINSTRING: 0x55, // U
  UNICODE: 0x56, // V
  APPEND: 0x61, // a
  APPENDS: 0x65, // e
  GET: 0x67, // g
  BINGET: 0x68, // h
  LONG_BINGET: 0x6a, // j
  LIST: 0x6c, // l
  EMPTY_LIST: 0x5d, // ]
  PUT: 0x70, // p
  BINPUT: 0x71, // q
  LONG_BINPUT: 0x72, // r
  SETITEM: 0x73, // s
  SETITEMS: 0x75, // u
  TUPLE: 0x74, // t
  EMPTY_TUPLE: 0x29, // )
  DICT: 0x64, // d
  EMPTY_DICT: 0x7d, // }
  BINFLOAT: 0x47, // G
  PROTO: 0x80,
  TUPLE1: 0x85,
  TUPLE2: 0x86,
  TUPLE3: 0x87,
  NEWTRUE: 0x88,
  NEWFALSE: 0x89,
  LONG1: 0x8a,
  LONG4: 0x8b,
  SHORT_BINUNICODE: 0x8c,
  BINUNICODE8: 0x8d,
  BINBYTES8: 0x8e,
  EMPTY_SET: 0x8f,
  ADDITEMS: 0x90,
  FROZENSET: 0x91,
  MEMOIZE: 0x94,
  FRAME: 0x95,
  BYTEARRAY8: 0x96,
} as const;

/** Opcodes that would import or call Python code: named in the error so the cause is clear. */
const CODE_OPCODES: Readonly<Record<number, string>> = {
  99: 'GLOBAL',
  147: 'STACK_GLOBAL',
  82: 'REDUCE',
  98: 'BUILD',
  105: 'INST',
  111: 'OBJ',
  129: 'NEWOBJ',
  146: 'NEWOBJ_EX',
  80: 'PERSID',
  81: 'BINPERSID',
  130: 'EXT1',
  131: 'EXT2',
  132: 'EXT4',
  151: 'NEXT_BUFFER',
  152: 'READONLY_BUFFER',
};

type Container = UnpickledValue[] | { [key: string]: UnpickledValue };

const utf8 = new TextDecoder('utf-8', { fatal: false });
const latin1 = new TextDecoder('latin1');

/** Longest dict key built from a tuple, in characters. */
const MAX_KEY_LENGTH = 4096;

/**
 * The string a dict key becomes. A tuple key is written out, `(a, b)`, iteratively and within
 * {@link MAX_KEY_LENGTH}; a list or dict key (unhashable in Python, and possibly holding itself)
 * is refused by returning null.
 */
function dictKey(key: UnpickledValue): string | null {
  if (typeof key === 'string') return key;
  if (typeof key === 'number' || typeof key === 'bigint' || typeof key === 'boolean')
    return String(key);
  if (key === null) return 'None';
  if (key instanceof Uint8Array) return String(key);
  if (!Array.isArray(key)) return null;
  let out = '';
  const work: (UnpickledValue | ')' | ', ')[] = [key];
  while (work.length > 0) {
    if (out.length > MAX_KEY_LENGTH) return null;
    const item = work.pop()!;
    if (item === ')' || item === ', ') {
      out += item;
    } else if (Array.isArray(item)) {
      if (work.length > MAX_KEY_LENGTH) return null;
      out += '(';
      work.push(')');
      for (let i = item.length - 1; i >= 0; i--) {
        work.push(item[i]!);
        if (i > 0) work.push(', ');
      }
    } else {
      const text = dictKey(item);
      if (text === null) return null;
      out += text;
    }
  }
  return out.length > MAX_KEY_LENGTH ? null : out;
}

function newDict(): { [key: string]: UnpickledValue } {
  return Object.create(null) as { [key: string]: UnpickledValue };
}

/** Two's complement little-endian integer of `bytes` (Python's `LONG1`/`LONG4` payload). */
function decodeLong(bytes: Uint8Array): number | bigint {
  if (bytes.length === 0) return 0;
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  if (bytes[bytes.length - 1]! >= 0x80) value -= 1n << BigInt(8 * bytes.length);
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

/**
 * Reads one pickled value from `bytes`.
 *
 * @throws TraceFormatError (with the byte offset) on a truncated file, an unknown opcode, an opcode
 * that would run Python code, or a stack that does not match the opcode.
 */
export function unpickle(bytes: Uint8Array, options: UnpickleOptions = {}): UnpickledValue {
  const name = options.name ?? 'pickle';
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const limits: UnpickleLimits = { ...DEFAULT_UNPICKLE_LIMITS, ...options.limits };
  const stack: UnpickledValue[] = [];
  /** Stack positions of the MARKs, innermost last (Python's metastack). */
  const marks: number[] = [];
  const memo = new Map<number, UnpickledValue>();
  /** Per container: its size after memo expansion (itself and everything under it) and depth. */
  const sizes = new WeakMap<object, number>();
  const depths = new WeakMap<object, number>();
  let containers = 0;
  let items = 0;
  let expanded = 0;
  let at = 0;
  let opAt = 0;

  const fail = (expected: string, found: string): never => {
    throw new TraceFormatError(name, opAt, expected, found, 'byte');
  };
  const need = (n: number): void => {
    if (at + n > bytes.length) {
      fail(`${n} more byte(s) of operand`, `the end of the file (truncated pickle)`);
    }
  };
  const u8 = (): number => {
    need(1);
    return bytes[at++]!;
  };
  const u16 = (): number => {
    need(2);
    const v = view.getUint16(at, true);
    at += 2;
    return v;
  };
  const u32 = (): number => {
    need(4);
    const v = view.getUint32(at, true);
    at += 4;
    return v;
  };
  const u64 = (): number => {
    need(8);
    const v = view.getBigUint64(at, true);
    at += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) fail('a length below 2^53', String(v));
    return Number(v);
  };
  const take = (n: number): Uint8Array => {
    need(n);
    const slice = bytes.subarray(at, at + n);
    at += n;
    return slice;
  };
  const line = (): string => {
    const end = bytes.indexOf(0x0a, at);
    if (end < 0) fail('a newline-terminated operand', 'the end of the file');
    const text = latin1.decode(bytes.subarray(at, end));
    at = end + 1;
    return text;
  };
  const limit = (what: string, most: number): never =>
    fail(`at most ${most.toLocaleString('en-US')} ${what} (the pickle reader's limit)`, 'more');
  const bottom = (): number => (marks.length > 0 ? marks[marks.length - 1]! : 0);
  const push = (value: UnpickledValue): void => {
    if (stack.length >= limits.maxItems) limit('values on the stack', limits.maxItems);
    stack.push(value);
  };
  const pop = (): UnpickledValue => {
    if (stack.length === 0) fail('a value on the stack', 'an empty stack');
    if (stack.length <= bottom()) fail('a value on the stack', 'a MARK');
    return stack.pop() as UnpickledValue;
  };
  const top = (): UnpickledValue => {
    if (stack.length <= bottom()) fail('a value on the stack', stack.length ? 'a MARK' : 'none');
    return stack[stack.length - 1] as UnpickledValue;
  };
  const popMark = (): UnpickledValue[] => {
    const k = marks.pop();
    if (k === undefined) fail('a MARK before this opcode', 'no MARK on the stack');
    return stack.splice(k!);
  };
  const isContainer = (value: UnpickledValue): value is Container =>
    value !== null && typeof value === 'object' && !(value instanceof Uint8Array);
  /** Counts `item` into `container`: items held, size after memo expansion, depth. */
  const added = (container: Container, item: UnpickledValue): void => {
    if (++items > limits.maxItems) limit('values in lists, tuples and dicts', limits.maxItems);
    const weight = isContainer(item) ? (sizes.get(item) ?? 1) : 1;
    expanded += weight;
    if (expanded > limits.maxExpandedSize) {
      limit(
        'values after memo expansion (a value repeated through the memo counts each time)',
        limits.maxExpandedSize,
      );
    }
    sizes.set(container, (sizes.get(container) ?? 1) + weight);
    const depth = (isContainer(item) ? (depths.get(item) ?? 1) : 0) + 1;
    if (depth > (depths.get(container) ?? 1)) {
      if (depth > limits.maxDepth) limit('levels of nesting', limits.maxDepth);
      depths.set(container, depth);
    }
  };
  /** Registers a new container holding `initial` (already in it). */
  const made = <T extends Container>(container: T, initial: readonly UnpickledValue[] = []): T => {
    if (++containers > limits.maxContainers) {
      limit('lists, tuples, sets and dicts', limits.maxContainers);
    }
    sizes.set(container, 1);
    depths.set(container, 1);
    for (const item of initial) added(container, item);
    return container;
  };
  const list = (value: UnpickledValue, what: string): UnpickledValue[] => {
    if (!Array.isArray(value)) fail(`a list under ${what}`, typeOf(value));
    return value as UnpickledValue[];
  };
  const dict = (value: UnpickledValue, what: string): { [key: string]: UnpickledValue } => {
    if (!isContainer(value) || Array.isArray(value)) fail(`a dict under ${what}`, typeOf(value));
    return value as { [key: string]: UnpickledValue };
  };
  const setItems = (target: { [key: string]: UnpickledValue }, pairs: UnpickledValue[]): void => {
    if (pairs.length % 2 !== 0) fail('key/value pairs after MARK', `${pairs.length} items`);
    for (let i = 0; i < pairs.length; i += 2) {
      const key = dictKey(pairs[i]!);
      if (key === null) {
        fail(
          'a hashable dict key (str, int, float, bool, None or a short tuple of them)',
          typeOf(pairs[i]),
        );
      }
      added(target, pairs[i + 1]!);
      target[key!] = pairs[i + 1]!;
    }
  };
  const longBytes = (n: number): Uint8Array => {
    if (n > limits.maxIntegerBytes) limit('bytes in one integer', limits.maxIntegerBytes);
    return take(n);
  };
  const decimal = (text: string): number | bigint => {
    if (text.length > limits.maxIntegerBytes * 3) {
      limit('digits in one integer', limits.maxIntegerBytes * 3);
    }
    return decodeDecimal(text);
  };
  /** Memo entries at most: each is a value the pickle made, so twice the containers is ample. */
  const maxMemo = 2 * limits.maxContainers;
  const memoPut = (index: number, value: UnpickledValue): void => {
    if (memo.size >= maxMemo && !memo.has(index)) limit('memo entries', maxMemo);
    memo.set(index, value);
  };
  const memoGet = (index: number): UnpickledValue => {
    if (!memo.has(index)) fail('a memo index that was stored', `index ${index}`);
    return memo.get(index)!;
  };

  for (;;) {
    if (at >= bytes.length) {
      opAt = at;
      fail('an opcode (STOP ends a pickle)', 'the end of the file (truncated pickle)');
    }
    opAt = at;
    const op = bytes[at++]!;
    switch (op) {
      case Op.PROTO: {
        const version = u8();
        if (version > 5) fail('pickle protocol 0 to 5', `protocol ${version}`);
        break;
      }
      case Op.FRAME:
        u64(); // frame length: the data simply follows
        break;
      case Op.STOP: {
        const value = pop();
        return value;
      }
      case Op.MARK:
        if (marks.length >= limits.maxItems) limit('open MARKs', limits.maxItems);
        marks.push(stack.length);
        break;
      case Op.POP:
        pop();
        break;
      case Op.POP_MARK:
        popMark();
        break;
      case Op.DUP:
        push(top());
        break;
      case Op.NONE:
        push(null);
        break;
      case Op.NEWTRUE:
        push(true);
        break;
      case Op.NEWFALSE:
        push(false);
        break;
      case Op.BININT: {
        need(4);
        push(view.getInt32(at, true));
        at += 4;
        break;
      }
      case Op.BININT1:
        push(u8());
        break;
      case Op.BININT2:
        push(u16());
        break;
      case Op.LONG1:
        push(decodeLong(take(u8())));
        break;
      case Op.LONG4:
        push(decodeLong(longBytes(u32())));
        break;
      case Op.INT: {
        const text = line().trim();
        if (text === '00') push(false);
        else if (text === '01') push(true);
        else if (/^[-+]?\d+$/.test(text)) push(decimal(text));
        else fail('a decimal integer', JSON.stringify(text));
        break;
      }
      case Op.LONG: {
        const text = line().trim().replace(/L$/, '');
        if (!/^[-+]?\d+$/.test(text)) fail('a decimal integer', JSON.stringify(text));
        push(decimal(text));
        break;
      }
      case Op.FLOAT: {
        const text = line().trim();
        const value = Number(text);
        if (text === '' || Number.isNaN(value)) fail('a decimal float', JSON.stringify(text));
        push(value);
        break;
      }
      case Op.BINFLOAT: {
        need(8);
        push(view.getFloat64(at, false));
        at += 8;
        break;
      }
      case Op.SHORT_BINUNICODE:
        push(utf8.decode(take(u8())));
        break;
      case Op.BINUNICODE:
        push(utf8.decode(take(u32())));
        break;
      case Op.BINUNICODE8:
        push(utf8.decode(take(u64())));
        break;
      case Op.UNICODE:
        push(line());
        break;
      case Op.SHORT_BINSTRING:
        push(latin1.decode(take(u8())));
        break;
      case Op.BINSTRING:
        push(latin1.decode(take(u32())));
        break;
      case Op.SHORT_BINBYTES:
        push(take(u8()).slice());
        break;
      case Op.BINBYTES:
        push(take(u32()).slice());
        break;
      case Op.BINBYTES8:
      case Op.BYTEARRAY8:
        push(take(u64()).slice());
        break;
      case Op.EMPTY_LIST:
      case Op.EMPTY_TUPLE:
      case Op.EMPTY_SET:
        push(made([]));
        break;
      case Op.LIST:
      case Op.TUPLE:
      case Op.FROZENSET: {
        const values = popMark();
        push(made(values, values));
        break;
      }
      case Op.APPEND: {
        const value = pop();
        const target = list(top(), 'APPEND');
        added(target, value);
        target.push(value);
        break;
      }
      case Op.APPENDS:
      case Op.ADDITEMS: {
        const values = popMark();
        const target = list(top(), op === Op.APPENDS ? 'APPENDS' : 'ADDITEMS');
        for (const value of values) {
          added(target, value);
          target.push(value);
        }
        break;
      }
      case Op.TUPLE1: {
        const values = [pop()];
        push(made(values, values));
        break;
      }
      case Op.TUPLE2: {
        const b = pop();
        const a = pop();
        push(made([a, b], [a, b]));
        break;
      }
      case Op.TUPLE3: {
        const c = pop();
        const b = pop();
        const a = pop();
        push(made([a, b, c], [a, b, c]));
        break;
      }
      case Op.EMPTY_DICT:
        push(made(newDict()));
        break;
      case Op.DICT: {
        const pairs = popMark();
        const target = made(newDict());
        setItems(target, pairs);
        push(target);
        break;
      }
      case Op.SETITEM: {
        const value = pop();
        const key = pop();
        setItems(dict(top(), 'SETITEM'), [key, value]);
        break;
      }
      case Op.SETITEMS: {
        const pairs = popMark();
        setItems(dict(top(), 'SETITEMS'), pairs);
        break;
      }
      case Op.PUT: {
        const text = line().trim();
        if (!/^\d+$/.test(text)) fail('a decimal memo index', JSON.stringify(text));
        memoPut(Number(text), top());
        break;
      }
      case Op.BINPUT:
        memoPut(u8(), top());
        break;
      case Op.LONG_BINPUT:
        memoPut(u32(), top());
        break;
      case Op.MEMOIZE:
        memoPut(memo.size, top());
        break;
      case Op.GET: {
        const text = line().trim();
        if (!/^\d+$/.test(text)) fail('a decimal memo index', JSON.stringify(text));
        push(memoGet(Number(text)));
        break;
      }
      case Op.BINGET:
        push(memoGet(u8()));
        break;
      case Op.LONG_BINGET:
        push(memoGet(u32()));
        break;
      default: {
        const code = CODE_OPCODES[op];
        if (code !== undefined) {
          fail(
            'plain data (dict, list, tuple, str, int, float, bool, None)',
            `opcode ${code}, which would import or call Python code`,
          );
        }
        fail('a pickle opcode', `byte 0x${op.toString(16).padStart(2, '0')}`);
      }
    }
  }
}

function decodeDecimal(text: string): number | bigint {
  const value = BigInt(text);
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

/** A short description of a value's Python type, for error messages. */
export function typeOf(value: UnpickledValue | undefined): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'None';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'object') return 'a dict';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return `the ${typeof value} ${String(value)}`;
}
