/** Option checks shared by the generators: a clear `RangeError` naming the option and the rule. */

/** Throws unless `value` is a safe integer ≥ `min`. */
export function checkInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`${name} must be an integer ≥ ${min}, got ${String(value)}`);
  }
}

/** Throws unless `min ≤ max` for a pair of size or length options. */
export function checkRange(minName: string, min: number, maxName: string, max: number): void {
  if (min > max) throw new RangeError(`${minName} (${min}) must not exceed ${maxName} (${max})`);
}
