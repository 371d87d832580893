/**
 * Argument checks and alignment arithmetic. Everything here is exact for every safe integer
 * (up to 2^53): no 32-bit bitwise operator touches an address or a size.
 */
import { InvalidArgumentError } from './errors';

const TWO_POW_30 = 0x40000000;

/** Whether `value` is a power of two that is a safe integer (1, 2, 4, ... 2^52). */
export function isPowerOfTwo(value: number): boolean {
  if (!Number.isSafeInteger(value) || value <= 0) return false;
  // Bit tricks are exact below 2^31; above, strip 2^30 factors first.
  let v = value;
  while (v > TWO_POW_30) {
    if (v % TWO_POW_30 !== 0) return false;
    v /= TWO_POW_30;
  }
  return (v & (v - 1)) === 0;
}

/** Smallest multiple of `alignment` (a power of two) that is ≥ `value`. */
export function alignUp(value: number, alignment: number): number {
  const remainder = value % alignment;
  return remainder === 0 ? value : value + (alignment - remainder);
}

/** Largest multiple of `alignment` (a power of two) that is ≤ `value`. */
export function alignDown(value: number, alignment: number): number {
  return value - (value % alignment);
}

/** Whether `value` is a multiple of `alignment`. */
export function isAligned(value: number, alignment: number): boolean {
  return value % alignment === 0;
}

/** Smallest power of two ≥ `value` (for `value` ≥ 1, up to 2^52). */
export function nextPowerOfTwo(value: number): number {
  if (value <= 1) return 1;
  let p = 2 ** Math.ceil(Math.log2(value));
  // log2 of a value just above a power of two can round down; correct either way.
  while (p < value) p *= 2;
  while (p / 2 >= value) p /= 2;
  return p;
}

/** Base-2 logarithm of a power of two, exact. */
export function log2OfPowerOfTwo(value: number): number {
  let exponent = Math.round(Math.log2(value));
  while (2 ** exponent < value) exponent++;
  while (2 ** exponent > value) exponent--;
  return exponent;
}

/** Throws `InvalidArgumentError` unless `size` is a positive safe integer. */
export function checkSize(size: number, argument = 'size'): void {
  if (!Number.isSafeInteger(size) || size <= 0) {
    throw new InvalidArgumentError(argument, size, 'a positive safe integer number of bytes');
  }
}

/** Throws `InvalidArgumentError` unless `alignment` is a power of two. */
export function checkAlignment(alignment: number, argument = 'alignment'): void {
  if (!isPowerOfTwo(alignment)) {
    throw new InvalidArgumentError(argument, alignment, 'a power of two number of bytes');
  }
}

/**
 * Validates an `allocate(size, alignment?)` call and returns the alignment to honour: the larger of
 * the requested one and the allocator's minimum.
 */
export function checkRequest(size: number, alignment: number | undefined, minimum: number): number {
  checkSize(size);
  if (alignment === undefined) return minimum;
  checkAlignment(alignment);
  return alignment > minimum ? alignment : minimum;
}

/** Throws `InvalidArgumentError` unless `value` is a non-negative safe integer. */
export function checkNonNegativeInteger(value: number, argument: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(argument, value, 'a non-negative safe integer');
  }
}

/** The range an allocator manages, as {@link checkRange} read it from its options. */
export interface CheckedRange {
  readonly capacity: number;
  readonly base: number;
}

/**
 * Checks the options of an allocator over `[base, base + capacity)`: an object whose `capacity` is
 * a positive safe integer and whose `base` (0 when absent) is a non-negative safe integer, with the
 * end of the range at most 2^53 so every address in it is exact. Returns the two.
 *
 * @throws InvalidArgumentError naming the first option at fault.
 */
export function checkRange(options: {
  readonly capacity: number;
  readonly base?: number;
}): CheckedRange {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', options, 'an object with a capacity');
  }
  const { capacity } = options;
  checkSize(capacity, 'capacity');
  const base = options.base ?? 0;
  checkNonNegativeInteger(base, 'base');
  // 2^53 − base is exact; base + capacity could round down to 2^53.
  if (capacity > 2 ** 53 - base) {
    throw new InvalidArgumentError('capacity', capacity, 'base + capacity ≤ 2^53');
  }
  return { capacity, base };
}
