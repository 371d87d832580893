/**
 * What the streaming pickle machine ({@link PickleMachine}) builds and how it is bounded: its own
 * containers, the hooks that may consume them, the limits, and the decoding of operands.
 */

/** A list, tuple or set of the machine. */
export class PList {
  readonly items: unknown[] = [];
  /** Memo index of this list, or -1. */
  memo = -1;
  /** Items appended and consumed by the hooks (not in {@link items}). */
  consumed = 0;
  /** What the hooks attached to the list (the columns of a device trace, say). */
  sink: unknown = null;
  constructor(readonly tuple = false) {}
}

/** A dict of the machine: keys and values in insertion order. */
export class PDict {
  /** Keys and values, alternating, in insertion order. */
  readonly pairs: unknown[] = [];
  /** Memo index of this dict, or -1. */
  memo = -1;

  /** Number of keys. */
  get size(): number {
    return this.pairs.length >> 1;
  }

  /** The value of string key `key`, or undefined. */
  get(key: string): unknown {
    const pairs = this.pairs;
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === key) return pairs[i + 1];
    return undefined;
  }
}

/** What the machine calls as it builds. */
export interface MachineHooks {
  /**
   * `value` is appended to `list`: returns what the list keeps (`value`, or what stands for it),
   * or {@link CONSUMED} when the list keeps nothing. A hook that consumes or replaces a container
   * tells the machine with {@link PickleMachine.release} and {@link PickleMachine.forget}.
   */
  append(list: PList, value: unknown): unknown;
}

/** What {@link MachineHooks.append} returns for a value the list does not keep. */
export const CONSUMED: unique symbol = Symbol('consumed');

/** Bounds on what one streamed pickle may hold at once (not on the input's length). */
export interface MachineLimits {
  /** Values held in kept containers and on the stack. */
  readonly maxItems: number;
  /** Memo slots. */
  readonly maxMemo: number;
  /** Bytes of one string or bytes value. */
  readonly maxStringBytes: number;
  /** Bytes of strings held by the memo, summed. */
  readonly maxMemoStringBytes: number;
  /** Bytes of one integer (`LONG1`, `LONG4`). */
  readonly maxIntegerBytes: number;
}

/** Default {@link MachineLimits}: a few GB of memory at most, whatever the input's length. */
export const DEFAULT_MACHINE_LIMITS: MachineLimits = Object.freeze({
  maxItems: 24_000_000,
  maxMemo: 400_000_000,
  maxStringBytes: 64 * 1024 * 1024,
  maxMemoStringBytes: 1024 * 1024 * 1024,
  maxIntegerBytes: 1024,
});

export const CODE_OPCODES: Readonly<Record<number, string>> = {
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

export const utf8 = new TextDecoder('utf-8', { fatal: false });
export const latin1 = new TextDecoder('latin1');

/** A short description of a machine value's Python type, for error messages. */
export function machineTypeOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'None';
  if (value instanceof PList) return value.tuple ? 'a tuple' : 'a list';
  if (value instanceof PDict) return 'a dict';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === 'object') return 'an object';
  return `the ${typeof value} ${String(value)}`;
}

/** A string or bytes value of opcode `op` from `n` bytes at `at`. */
export function text(op: number, buf: Uint8Array, at: number, n: number): string | Uint8Array {
  if (op === 0x58 || op === 0x8d) return decodeUtf8(buf, at, n);
  if (op === 0x54 || op === 0x55) return latin1.decode(buf.subarray(at, at + n));
  return buf.slice(at, at + n);
}

/** UTF-8 text of `n` bytes at `at`: short ASCII without the decoder's call overhead. */
export function decodeUtf8(buf: Uint8Array, at: number, n: number): string {
  if (n <= 24) {
    let out = '';
    for (let i = at; i < at + n; i++) {
      const b = buf[i]!;
      if (b >= 0x80) return utf8.decode(buf.subarray(at, at + n));
      out += String.fromCharCode(b);
    }
    return out;
  }
  return utf8.decode(buf.subarray(at, at + n));
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
