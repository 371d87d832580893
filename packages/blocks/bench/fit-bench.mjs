// The benchmark loop both fit packages run (first-fit and best-fit bench/random-mix.mjs): random
// mix and same-size pairs, ns of CPU time per operation, median of several runs, beside a bump
// allocator on the same loop as the floor. The full comparison with peers is apps/bench.
const RUNS = 7;
const OPS = 1_000_000;

/**
 * CPU time of this process in ns: on a shared machine, time spent descheduled does not count.
 * Microsecond resolution, so each timed loop runs a million operations.
 */
function cpuTime() {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

/** xorshift32: seeded, no Math.random. */
function prng(seed) {
  let s = seed | 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** Log-uniform sizes in [16, 65536]. */
function sizes(count, random) {
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) out[i] = Math.floor(16 * 2 ** (random() * 12));
  return out;
}

function randomMix(make, live, seed) {
  const random = prng(seed);
  const a = make(2 ** 40);
  const addresses = new Float64Array(live * 2);
  let count = 0;
  const warm = sizes(live, random);
  for (let i = 0; i < live; i++) addresses[count++] = a.allocate(warm[i]);
  const size = sizes(OPS, random);
  const pick = new Float64Array(OPS);
  for (let i = 0; i < OPS; i++) pick[i] = random();
  const start = cpuTime();
  // Alternating free of a random live block and a fresh allocation: live count stays constant.
  for (let i = 0; i < OPS; i += 2) {
    const j = Math.floor(pick[i] * count);
    a.free(addresses[j]);
    const p = a.allocate(size[i]);
    if (p === null) throw new Error('allocation failed');
    addresses[j] = p;
  }
  const ns = (cpuTime() - start) / OPS;
  return ns;
}

function pairs(make, bytes) {
  const a = make(2 ** 30);
  // A few long-lived blocks so the index is not trivially empty.
  for (let i = 0; i < 64; i++) a.allocate(4096);
  const n = OPS;
  const start = cpuTime();
  for (let i = 0; i < n; i++) a.free(a.allocate(bytes));
  return (cpuTime() - start) / n;
}

/** A bump allocator on the same loop: the floor of what any JS allocation can cost here. */
function bumpFloor(live, seed) {
  const random = prng(seed);
  let top = 0;
  const bump = {
    allocate(size) {
      const at = top;
      top += size;
      return at;
    },
    free() {},
  };
  const addresses = new Float64Array(live);
  for (let i = 0; i < live; i++) addresses[i] = bump.allocate(16);
  const size = sizes(OPS, random);
  const pick = new Float64Array(OPS);
  for (let i = 0; i < OPS; i++) pick[i] = random();
  const start = cpuTime();
  for (let i = 0; i < OPS; i += 2) {
    const j = Math.floor(pick[i] * live);
    bump.free(addresses[j]);
    addresses[j] = bump.allocate(size[i]);
  }
  return (cpuTime() - start) / OPS;
}

function median(f) {
  const xs = [];
  for (let r = 0; r < RUNS; r++) xs.push(f(r));
  xs.sort((x, y) => x - y);
  return xs[Math.floor(xs.length / 2)];
}

/**
 * Prints the figures for one fit allocator: the bump floor in the same process, the random mix at
 * 5,000 and 100,000 live blocks, and same-size pairs of 64 B and 4 KiB.
 * @param {string} label
 * @param {(capacity: number) => { allocate(size: number): number | null; free(address: number): void }} make
 */
export function runFitBench(label, make) {
  const rows = [
    ['bump allocator floor, same loop (ns/op)', median((r) => bumpFloor(5_000, 0x1234 + r))],
    ['random mix, 5,000 live (ns/op)', median((r) => randomMix(make, 5_000, 0x1234 + r))],
    ['random mix, 100,000 live (ns/op)', median((r) => randomMix(make, 100_000, 0x5678 + r))],
    ['same-size pairs, 64 B (ns/pair)', median(() => pairs(make, 64))],
    ['same-size pairs, 4 KiB (ns/pair)', median(() => pairs(make, 4096))],
  ];
  console.log(`${label}, node ${process.version}`);
  for (const [name, ns] of rows) console.log(`${name.padEnd(40)} ${ns.toFixed(1)}`);
}
