// Shared by the packages' benchmarks (bench/*.mjs) and seeded tests: a seeded generator, log-uniform sizes, medians,
// CPU time.

/** mulberry32: a tiny seeded generator, enough to make the operation sequences. */
export function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Log-uniform sizes in [min, max], as a Float64Array of `count`. */
export function logUniformSizes(random, count, min, max) {
  const low = Math.log(min);
  const span = Math.log(max) - low;
  return Float64Array.from({ length: count }, () => Math.round(Math.exp(low + random() * span)));
}

/** The middle of `values` (the upper middle of an even count). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** CPU time of `body()` in nanoseconds (user + system), less sensitive to other processes. */
export function cpuNanoseconds(body) {
  const start = process.cpuUsage();
  body();
  const elapsed = process.cpuUsage(start);
  return (elapsed.user + elapsed.system) * 1000;
}

/**
 * Wall-clock ns per call of `body`: the median of `runs` timed loops of `iterations` calls each,
 * after a tenth as many calls (one at least) untimed.
 */
export function nsPerCall(body, iterations, runs = 7) {
  for (let i = 0; i < iterations / 10; i++) body();
  const times = [];
  for (let run = 0; run < runs; run++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) body();
    times.push(Number(process.hrtime.bigint() - start) / iterations);
  }
  return median(times);
}
