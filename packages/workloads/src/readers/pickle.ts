/**
 * A small Python unpickler for plain data: what `pickle.dump` writes for dictionaries, lists,
 * tuples, strings, bytes, numbers, booleans and `None`, in protocols 2 to 5. That is every opcode a
 * PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot()`) uses; anything that would run
 * Python code (`GLOBAL`, `REDUCE`, `BUILD`, ...) is refused, so reading an untrusted file is safe.
 *
 * ```
 *  bytes ─► opcode loop ─► stack of values, MARK positions, memo table ─► STOP: the top value
 *  (pickle-input.ts)  (this file)      (pickle-stack.ts)
 * ```
 *
 * Python values become: dict → plain object (keys converted to strings; `__proto__` is safe because
 * objects are created without a prototype), list and tuple → array, int → number (bigint beyond
 * 2^53), float → number, str → string, bytes → Uint8Array, None → null.
 *
 * Every error is a {@link TraceFormatError} with the byte offset of the opcode at fault and what was
 * expected there.
 */
import { PickleInput } from './pickle-input';
import { PickleStack } from './pickle-stack';
import { decodeLong } from './pickle-stream-values';
import {
  DEFAULT_UNPICKLE_LIMITS,
  newDict,
  refusal,
  type UnpickledValue,
  type UnpickleLimits,
} from './pickle-values';

export {
  DEFAULT_UNPICKLE_LIMITS,
  typeOf,
  type UnpickledValue,
  type UnpickleLimits,
} from './pickle-values';

/** Options of {@link unpickle}. */
export interface UnpickleOptions {
  /** Label for error messages. @defaultValue 'pickle' */
  readonly name?: string;
  /** Limits on what a pickle may build. @defaultValue {@link DEFAULT_UNPICKLE_LIMITS} */
  readonly limits?: Partial<UnpickleLimits>;
}

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

const utf8 = new TextDecoder('utf-8', { fatal: false });
const latin1 = new TextDecoder('latin1');

/** A decimal integer: a number when it is safe, else a bigint. */
function decodeDecimal(text: string): number | bigint {
  const value = BigInt(text);
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
  const input = new PickleInput(bytes, options.name ?? 'pickle');
  const stack = new PickleStack(input, { ...DEFAULT_UNPICKLE_LIMITS, ...options.limits });
  for (;;) {
    const op = input.opcode();
    if (op === Op.STOP) return stack.pop();
    if (
      !stackOp(op, input, stack) &&
      !scalarOp(op, input, stack) &&
      !containerOp(op, stack) &&
      !memoOp(op, input, stack)
    ) {
      refuse(op, input);
    }
  }
}

/** The opcodes that frame the data or move values on the stack; false when `op` is not one. */
function stackOp(op: number, input: PickleInput, stack: PickleStack): boolean {
  switch (op) {
    case Op.PROTO: {
      const version = input.u8();
      if (version > 5) input.fail('pickle protocol 0 to 5', `protocol ${version}`);
      return true;
    }
    case Op.FRAME:
      input.u64(); // frame length: the data simply follows
      return true;
    case Op.MARK:
      stack.mark();
      return true;
    case Op.POP:
      stack.pop();
      return true;
    case Op.POP_MARK:
      stack.popMark();
      return true;
    case Op.DUP:
      stack.push(stack.top());
      return true;
    default:
      return false;
  }
}

/** The opcodes that push a scalar, a string or bytes; false when `op` is not one. */
function scalarOp(op: number, input: PickleInput, stack: PickleStack): boolean {
  switch (op) {
    case Op.NONE:
      stack.push(null);
      return true;
    case Op.NEWTRUE:
      stack.push(true);
      return true;
    case Op.NEWFALSE:
      stack.push(false);
      return true;
    case Op.BININT:
      stack.push(input.i32());
      return true;
    case Op.BININT1:
      stack.push(input.u8());
      return true;
    case Op.BININT2:
      stack.push(input.u16());
      return true;
    case Op.LONG1:
      stack.push(takeLong(input, input.u8()));
      return true;
    case Op.LONG4: {
      const n = input.u32();
      const most = stack.limits.maxIntegerBytes;
      if (n > most) stack.limit('bytes in one integer', most);
      stack.push(takeLong(input, n));
      return true;
    }
    case Op.INT: {
      const text = input.line().trim();
      if (text === '00') stack.push(false);
      else if (text === '01') stack.push(true);
      else if (/^[-+]?\d+$/.test(text)) stack.push(decimal(text, stack));
      else input.fail('a decimal integer', JSON.stringify(text));
      return true;
    }
    case Op.LONG: {
      const text = input.line().trim().replace(/L$/, '');
      if (!/^[-+]?\d+$/.test(text)) input.fail('a decimal integer', JSON.stringify(text));
      stack.push(decimal(text, stack));
      return true;
    }
    case Op.FLOAT: {
      const text = input.line().trim();
      const value = Number(text);
      if (text === '' || Number.isNaN(value)) input.fail('a decimal float', JSON.stringify(text));
      stack.push(value);
      return true;
    }
    case Op.BINFLOAT:
      stack.push(input.f64());
      return true;
    default:
      return textOp(op, input, stack);
  }
}

/** The opcodes that push a string or bytes; false when `op` is not one. */
function textOp(op: number, input: PickleInput, stack: PickleStack): boolean {
  switch (op) {
    case Op.SHORT_BINUNICODE:
      stack.push(utf8.decode(input.take(input.u8())));
      return true;
    case Op.BINUNICODE:
      stack.push(utf8.decode(input.take(input.u32())));
      return true;
    case Op.BINUNICODE8:
      stack.push(utf8.decode(input.take(input.u64())));
      return true;
    case Op.UNICODE:
      stack.push(input.line());
      return true;
    case Op.SHORT_BINSTRING:
      stack.push(latin1.decode(input.take(input.u8())));
      return true;
    case Op.BINSTRING:
      stack.push(latin1.decode(input.take(input.u32())));
      return true;
    case Op.SHORT_BINBYTES:
      stack.push(input.take(input.u8()).slice());
      return true;
    case Op.BINBYTES:
      stack.push(input.take(input.u32()).slice());
      return true;
    case Op.BINBYTES8:
    case Op.BYTEARRAY8:
      stack.push(input.take(input.u64()).slice());
      return true;
    default:
      return false;
  }
}

/** The opcodes that build or fill lists, tuples, sets and dicts; false when `op` is not one. */
function containerOp(op: number, stack: PickleStack): boolean {
  switch (op) {
    case Op.EMPTY_LIST:
    case Op.EMPTY_TUPLE:
    case Op.EMPTY_SET:
      stack.push(stack.made([]));
      return true;
    case Op.LIST:
    case Op.TUPLE:
    case Op.FROZENSET: {
      const values = stack.popMark();
      stack.push(stack.made(values, values));
      return true;
    }
    case Op.APPEND: {
      const value = stack.pop();
      const target = stack.list(stack.top(), 'APPEND');
      stack.added(target, value);
      target.push(value);
      return true;
    }
    case Op.APPENDS:
    case Op.ADDITEMS: {
      const values = stack.popMark();
      const target = stack.list(stack.top(), op === Op.APPENDS ? 'APPENDS' : 'ADDITEMS');
      for (const value of values) {
        stack.added(target, value);
        target.push(value);
      }
      return true;
    }
    case Op.TUPLE1:
    case Op.TUPLE2:
    case Op.TUPLE3: {
      const values: UnpickledValue[] = [];
      for (let n = op - Op.TUPLE1 + 1; n > 0; n--) values.unshift(stack.pop());
      stack.push(stack.made(values, values));
      return true;
    }
    case Op.EMPTY_DICT:
      stack.push(stack.made(newDict()));
      return true;
    case Op.DICT: {
      const pairs = stack.popMark();
      const target = stack.made(newDict());
      stack.setItems(target, pairs);
      stack.push(target);
      return true;
    }
    case Op.SETITEM: {
      const value = stack.pop();
      const key = stack.pop();
      stack.setItems(stack.dict(stack.top(), 'SETITEM'), [key, value]);
      return true;
    }
    case Op.SETITEMS: {
      const pairs = stack.popMark();
      stack.setItems(stack.dict(stack.top(), 'SETITEMS'), pairs);
      return true;
    }
    default:
      return false;
  }
}

/** The opcodes that store into or read from the memo; false when `op` is not one. */
function memoOp(op: number, input: PickleInput, stack: PickleStack): boolean {
  switch (op) {
    case Op.PUT:
      stack.memoPut(memoIndex(input), stack.top());
      return true;
    case Op.BINPUT:
      stack.memoPut(input.u8(), stack.top());
      return true;
    case Op.LONG_BINPUT:
      stack.memoPut(input.u32(), stack.top());
      return true;
    case Op.MEMOIZE:
      stack.memoPut(stack.memoSize, stack.top());
      return true;
    case Op.GET:
      stack.push(stack.memoGet(memoIndex(input)));
      return true;
    case Op.BINGET:
      stack.push(stack.memoGet(input.u8()));
      return true;
    case Op.LONG_BINGET:
      stack.push(stack.memoGet(input.u32()));
      return true;
    default:
      return false;
  }
}

/** A protocol 0 memo index: a decimal line. */
function memoIndex(input: PickleInput): number {
  const text = input.line().trim();
  if (!/^\d+$/.test(text)) input.fail('a decimal memo index', JSON.stringify(text));
  return Number(text);
}

/** A decimal integer within the digits limit. */
function decimal(text: string, stack: PickleStack): number | bigint {
  const most = stack.limits.maxIntegerBytes * 3;
  if (text.length > most) stack.limit('digits in one integer', most);
  return decodeDecimal(text);
}

/** Fails on an opcode that is not plain data, naming those that would run Python code. */
function refuse(op: number, input: PickleInput): never {
  return input.fail(...refusal(op));
}

/** The `n`-byte little-endian integer operand at the input's position (`LONG1`, `LONG4`). */
function takeLong(input: PickleInput, n: number): number | bigint {
  const bytes = input.take(n);
  return decodeLong(bytes, 0, bytes.length);
}
