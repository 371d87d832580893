/**
 * Plain values from a pickle: what `pickle.load` gives for dicts, lists, tuples, sets, strings,
 * bytes, numbers, booleans and `None`, as JavaScript values. It is the streaming machine over one
 * buffer, its containers then made plain:
 *
 * ```
 *  bytes ─► PickleMachine (keeps every value) ─► end(): PList / PDict ─► plainValue ─► plain values
 * ```
 *
 * dict → an object without a prototype (so `__proto__` is only a key; keys as strings), list, tuple
 * and set → array (a tuple through {@link UnpickleOptions.tuple} when told), int → number (bigint
 * past 2^53), float → number, str → string, bytes → Uint8Array, None → null. A container the memo
 * repeats is made once, but each place it is walked counts, so a few bytes that stand for an
 * enormous value are refused (`maxExpandedSize`), as is nesting past `maxDepth`.
 */
import { DEFAULT_MACHINE_LIMITS, type MachineLimits } from './hooks';
import { PickleMachine } from './machine';
import { type PickleErrorFactory, pickleErrors } from './pickle-error';
import { PDict, PList } from './values';

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
 * What one pickle may hold, and what it may expand to: the machine's limits, and the bounds of the
 * walk that makes its values plain.
 */
export interface UnpickleLimits extends MachineLimits {
  /** Deepest nesting of lists, tuples and dicts. */
  readonly maxDepth: number;
  /** Values visited in making the result plain, a value the memo repeats counted each time. */
  readonly maxExpandedSize: number;
}

/**
 * The limits of {@link unpickle} unless told otherwise: the machine's, and 192 M values after memo
 * expansion (a memory snapshot of 128 MiB expands to about 60 M), which keeps a hostile pickle
 * within a few seconds and about 1 GB.
 */
export const DEFAULT_UNPICKLE_LIMITS: UnpickleLimits = Object.freeze({
  ...DEFAULT_MACHINE_LIMITS,
  maxDepth: 1000,
  maxExpandedSize: 192_000_000,
});

/** Options of {@link unpickle}. */
export interface UnpickleOptions {
  /** The input's name, for errors. @defaultValue 'pickle' */
  readonly name?: string;
  /** Limits on what the pickle may hold. @defaultValue {@link DEFAULT_UNPICKLE_LIMITS} */
  readonly limits?: Partial<UnpickleLimits>;
  /** What a tuple becomes. @defaultValue its items, as an array */
  readonly tuple?: (items: UnpickledValue[]) => UnpickledValue;
  /** Makes the errors. @defaultValue {@link PickleError}s */
  readonly error?: PickleErrorFactory;
}

/**
 * Reads one pickled value from `bytes` (see the module comment).
 *
 * @throws PickleError (or what `options.error` makes), with the byte offset, on a truncated file,
 * an unknown opcode, an opcode that would run Python code, a stack that does not match the opcode,
 * or a pickle past a limit.
 */
export function unpickle(bytes: Uint8Array, options: UnpickleOptions = {}): UnpickledValue {
  const limits = { ...DEFAULT_UNPICKLE_LIMITS, ...options.limits };
  const error = options.error ?? pickleErrors(options.name ?? 'pickle');
  const machine = new PickleMachine({ append: (_, value) => value }, { limits, error });
  machine.push(bytes);
  const value = machine.end();
  return plainValue(value, {
    at: bytes.length,
    error,
    maxVisits: limits.maxExpandedSize,
    maxDepth: limits.maxDepth,
    ...(options.tuple ? { tuple: options.tuple } : {}),
  }) as UnpickledValue;
}

/** Options of {@link plainValue}. */
export interface PlainOptions {
  /** Byte offset of errors (the walk comes after the read: its end, say). */
  readonly at: number;
  /** Makes the errors. */
  readonly error: PickleErrorFactory;
  /** Most values visited, a value the memo repeats counted each time. */
  readonly maxVisits: number;
  /** Deepest nesting. @defaultValue 1000 */
  readonly maxDepth?: number;
  /** What a value that is no pickle value stands for (an interned frame, say), else undefined. */
  readonly frame?: (value: unknown) => unknown;
  /** What a tuple becomes. @defaultValue its items */
  readonly tuple?: (items: UnpickledValue[]) => UnpickledValue;
}

/**
 * A machine value as plain values, as {@link unpickle} makes them: dicts as objects without a
 * prototype (keys as `dictKey` writes them), lists, tuples and sets as arrays. Each container is
 * made once, so a value the memo repeats stays one value; its visits are counted all the same,
 * since a reader walking the result pays for each, and nesting is bounded.
 *
 * @throws what `options.error` makes, past `maxVisits` values or `maxDepth` levels.
 */
export function plainValue(value: unknown, options: PlainOptions): unknown {
  let budget = options.maxVisits;
  const maxDepth = options.maxDepth ?? DEFAULT_UNPICKLE_LIMITS.maxDepth;
  const made = new Map<unknown, unknown>();
  /** Values visited in making each container: what a walk of it costs, memo repeats counted. */
  const expanded = new Map<unknown, number>();
  const fail = (expected: string, found = 'more'): never => {
    throw options.error(options.at, expected, found);
  };
  const spend = (n: number) => {
    budget -= n;
    if (budget < 0) {
      fail(
        `at most ${options.maxVisits.toLocaleString('en-US')} values after memo expansion ` +
          '(a value repeated through the memo counts each time)',
      );
    }
  };
  /** A dict key: a tuple's items as an array (whatever `tuple` makes of values), else a value. */
  const convertKey = (k: unknown, depth: number): unknown => {
    if (!(k instanceof PList) || !k.tuple) return convert(k, depth);
    if (depth > maxDepth) fail(`at most ${maxDepth.toLocaleString('en-US')} levels of nesting`);
    spend(1);
    return k.items.map((item) => convertKey(item, depth + 1));
  };
  const convert = (v: unknown, depth: number): unknown => {
    if (!(v instanceof PList) && !(v instanceof PDict)) {
      spend(1);
      return options.frame?.(v) ?? v;
    }
    if (v instanceof PList && v.sink !== null) {
      // A list the hooks took over (a stack's frames, emptied once interned).
      const stands = options.frame?.(v);
      if (stands !== undefined) {
        spend(1);
        return stands;
      }
    }
    const done = made.get(v);
    if (done !== undefined) {
      spend(expanded.get(v) ?? 1);
      return done;
    }
    if (depth > maxDepth) fail(`at most ${maxDepth.toLocaleString('en-US')} levels of nesting`);
    const before = budget;
    spend(1);
    let out: unknown;
    if (v instanceof PList) {
      const list: unknown[] = [];
      made.set(v, list);
      for (const item of v.items) list.push(convert(item, depth + 1));
      out = list;
      // A tuple holds no reference to itself: its stand-in takes its place in the cache.
      if (v.tuple && options.tuple) made.set(v, (out = options.tuple(list as UnpickledValue[])));
    } else {
      const dict = Object.create(null) as Record<string, unknown>;
      made.set(v, dict);
      for (let i = 0; i < v.pairs.length; i += 2) {
        const key = dictKey(convertKey(v.pairs[i], depth + 1) as UnpickledValue);
        if (key === null) {
          fail(
            'a hashable dict key (str, int, float, bool, None or a short tuple of them)',
            'a tuple holding a list or dict',
          );
        }
        dict[key!] = convert(v.pairs[i + 1], depth + 1);
      }
      out = dict;
    }
    expanded.set(v, before - budget);
    return out;
  };
  return convert(value, 0);
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
