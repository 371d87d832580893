/** mulberry32: a tiny seeded generator; each call gives a number in [0, 1). */
export function generator(seed: number): () => number;
/** Log-uniform sizes in [min, max], as a Float64Array of `count`. */
export function logUniformSizes(
  random: () => number,
  count: number,
  min: number,
  max: number,
): Float64Array;
/** The middle of `values` (the upper middle of an even count). */
export function median(values: readonly number[]): number;
/** CPU time of `body()` in nanoseconds (user + system). */
export function cpuNanoseconds(body: () => void): number;
/** Wall-clock ns per call of `body`: the median of `runs` timed loops of `iterations` calls. */
export function nsPerCall(body: () => void, iterations: number, runs?: number): number;
