// The machine's price of a dependent random load, by working-set size: what a random mix with many
// live blocks charges an allocator for each record it must read before it knows the next one.
// Each load's address comes from the previous load (a random cycle through one 64-byte line per
// element), so neither the prefetcher nor out-of-order execution hides the latency.
// Run: node apps/bench/scripts/memory-latency.mjs
const SIZES_KIB = [256, 512, 1024, 2048, 4096, 8192, 16384, 65536, 196608];
const STEPS = 2_000_000;
const LINE_WORDS = 16; // 64 bytes of Int32

/** A seeded permutation of 0..n−1 (xorshift32, Fisher–Yates). */
function permutation(n, seed) {
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let s = seed;
  for (let i = n - 1; i > 0; i--) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    const j = (s >>> 0) % (i + 1);
    const t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  return order;
}

console.log(`node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
console.log('working set   ns per dependent load (median of 5)');
let checksum = 0;
for (const kib of SIZES_KIB) {
  const words = (kib * 1024) / 4;
  const lines = words / LINE_WORDS;
  const order = permutation(lines, 0x2545f491);
  const next = new Int32Array(words);
  for (let i = 0; i < lines; i++) next[order[i] * LINE_WORDS] = order[(i + 1) % lines] * LINE_WORDS;
  let at = 0;
  for (let i = 0; i < STEPS; i++) at = next[at]; // warm: pages touched, code optimised
  const times = [];
  for (let run = 0; run < 5; run++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < STEPS; i++) at = next[at];
    times.push(Number(process.hrtime.bigint() - start) / STEPS);
  }
  times.sort((a, b) => a - b);
  checksum += at;
  const label = kib >= 1024 ? `${kib / 1024} MiB` : `${kib} KiB`;
  console.log(`${label.padStart(11)}   ${times[2].toFixed(1)}`);
}
// Printed so that no load is dead code.
console.log(`(checksum ${checksum})`);
