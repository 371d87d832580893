/**
 * The values a recording holds, read the same way by every reader: a dict (a parsed JSON object or
 * a dict of the pickle machine), a field of one, a number, an address, and what an unexpected value
 * is called in an error message.
 */
import { machineTypeOf, PDict, PList, typeOf, type UnpickledValue } from '@allot/pickle';

/**
 * A dict: a parsed JSON object (not an array, not bytes), or a dict of the pickle machine, whose
 * fields {@link fieldOf} reads.
 */
export type Dict = { readonly [key: string]: unknown };

/** Whether `value` is a dict (see {@link Dict}). */
export function isDict(value: unknown): value is Dict {
  return (
    value instanceof PDict ||
    (value !== null &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      !(value instanceof Uint8Array) &&
      !(value instanceof PList))
  );
}

/** Field `key` of a dict (see {@link Dict}); undefined when it has none. */
export function fieldOf(dict: Dict | PDict, key: string): unknown {
  return dict instanceof PDict ? dict.get(key) : dict[key];
}

/** The items of a list (a JSON array, or a list or tuple of the pickle machine), or null. */
export function itemsOf(value: unknown): readonly unknown[] | null {
  if (Array.isArray(value)) return value;
  return value instanceof PList ? value.items : null;
}

/** A number from a recorded value (a bigint converted; NaN for anything else). */
export function numberOf(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  return Number.NaN;
}

/**
 * An address from a recording: a non-negative integer, or a string in decimal or `0x` hex.
 * Returns NaN when it is neither.
 */
export function parseAddress(value: unknown): number {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : NaN;
  if (typeof value === 'bigint') {
    return value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : NaN;
  }
  if (typeof value !== 'string') return NaN;
  const text = value.trim();
  if (/^0x[0-9a-f]+$/i.test(text) || /^\d+$/.test(text)) {
    const parsed = Number(text);
    return Number.isSafeInteger(parsed) ? parsed : NaN;
  }
  return NaN;
}

/** What a recorded value is, for an error message: `a list`, `the string "…"`, `None`. */
export function describe(value: unknown): string {
  return value instanceof PDict || value instanceof PList
    ? machineTypeOf(value)
    : typeOf(value as UnpickledValue);
}
