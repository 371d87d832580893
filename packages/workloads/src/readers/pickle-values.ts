/**
 * What the pickle reader builds, and its bounds: the value types, the limits on what one pickle may
 * build, and the small rules for dict keys shared by the reader's parts.
 */

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

/** A list, tuple or set (an array), or a dict (an object without a prototype). */
export type Container = UnpickledValue[] | { [key: string]: UnpickledValue };

/** Whether `value` is a container (an array or a dict object), as opposed to a scalar or bytes. */
export function isContainer(value: UnpickledValue): value is Container {
  return value !== null && typeof value === 'object' && !(value instanceof Uint8Array);
}

/** Longest dict key built from a tuple, in characters. */
const MAX_KEY_LENGTH = 4096;

/**
 * The string a dict key becomes. A tuple key is written out, `(a, b)`, iteratively and within
 * {@link MAX_KEY_LENGTH}; a list or dict key (unhashable in Python, and possibly holding itself)
 * is refused by returning null.
 */
export function dictKey(key: UnpickledValue): string | null {
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

/** An empty dict: an object without a prototype, so a key `__proto__` is only a key. */
export function newDict(): { [key: string]: UnpickledValue } {
  return Object.create(null) as { [key: string]: UnpickledValue };
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

/** Opcodes that would import or call Python code, by byte value: named in the refusal. */
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

/**
 * What a reader says of opcode `op` that is no plain data: what it expected, and what it found
 * (naming an opcode that would run Python code).
 */
export function refusal(op: number): [expected: string, found: string] {
  const code = CODE_OPCODES[op];
  return code !== undefined
    ? [
        'plain data (dict, list, tuple, str, int, float, bool, None)',
        `opcode ${code}, which would import or call Python code`,
      ]
    : ['a pickle opcode', `byte 0x${op.toString(16).padStart(2, '0')}`];
}
