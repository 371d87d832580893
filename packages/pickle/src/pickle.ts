/**
 * Plain JavaScript values as a pickle, through {@link PickleWriter}: CPython's opcodes and frames,
 * protocol 4, the bytes Python's `pickle.load` and PyTorch's memory_viz page both read.
 *
 * ```
 *  null → None   boolean → bool   number → int (a safe integer but -0) or float   bigint → int
 *  string → str  Uint8Array → bytes   array → list   PickleTuple → tuple   PickleFloat → float
 *  object → dict (string keys; `undefined` values left out, as in JSON)
 * ```
 *
 * A string of at most 64 characters is written once and referred to after (dict keys repeat in
 * every record); an array or object met again is referred to, as CPython does for an object it
 * pickled before, so shared values stay shared and a value that holds itself is written.
 */
import { ItemBatches, PickleWriter } from './writer';

/** A Python tuple. */
export class PickleTuple {
  constructor(readonly items: readonly PickleValue[]) {}
}

/** A number written as a Python `float` even when it is integral. */
export class PickleFloat {
  constructor(readonly value: number) {}
}

/** Values {@link pickle} writes. */
export type PickleValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
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

/** Strings at most this long are written once and referred to after. */
const SHARED_STRING_LENGTH = 64;

/** Serialises `value` as a Python pickle (see the module comment for the mapping). */
export function pickle(value: PickleValue): Uint8Array {
  const writer = new PickleWriter(1 << 16);
  const strings = new Map<string, number>();
  const seen = new Map<object, number>();
  const write = (v: PickleValue | undefined): void => {
    if (v === null || v === undefined) writer.none();
    else if (typeof v === 'boolean') writer.bool(v);
    else if (typeof v === 'number') {
      if (Number.isSafeInteger(v) && !Object.is(v, -0)) writer.int(v);
      else writer.float(v);
    } else if (typeof v === 'bigint') writer.int(v);
    else if (v instanceof PickleFloat) writer.float(v.value);
    else if (typeof v === 'string') {
      const index = strings.get(v);
      if (index !== undefined) writer.get(index);
      else if (v.length > SHARED_STRING_LENGTH) writer.str(v);
      else strings.set(v, writer.str(v));
    } else if (seen.has(v)) writer.get(seen.get(v)!);
    else if (v instanceof Uint8Array) seen.set(v, writer.bytes(v));
    else if (v instanceof PickleTuple) {
      writer.tupleStart(v.items.length);
      for (const item of v.items) write(item);
      const index = writer.tupleEnd(v.items.length);
      if (index >= 0) seen.set(v, index);
    } else if (Array.isArray(v)) {
      seen.set(v, writer.emptyList());
      const batches = new ItemBatches(writer, v.length, false);
      for (const item of v as readonly PickleValue[]) {
        batches.before();
        write(item);
        batches.after();
      }
    } else {
      const dict = v as { readonly [key: string]: PickleValue | undefined };
      seen.set(dict, writer.emptyDict());
      const keys = Object.keys(dict).filter((key) => dict[key] !== undefined);
      const batches = new ItemBatches(writer, keys.length, true);
      for (const key of keys) {
        batches.before();
        write(key);
        write(dict[key]);
        batches.after();
      }
    }
  };
  writer.start();
  write(value);
  writer.finish();
  return writer.ready().slice();
}
