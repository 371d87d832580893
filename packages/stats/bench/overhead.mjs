// withStats overhead on same-size pairs (allocate 64 B, free it, repeat) over a deliberately cheap
// upstream (a LIFO free list of fixed-size slots), so the adaptor's own cost is what shows:
//   - bare upstream vs withStats with tracing off: ns added per operation (an allocate or a free);
//   - tracing on (no stacks) vs off: ns added per recorded event;
//   - tracing with stack traces: ns per event;
//   - garbage collections seen during the withStats run with tracing off (expected: none).
// Medians of several runs; every ratio is taken within the same run. Times are CPU time
// (process.cpuUsage), so other processes on a shared machine inflate them less than wall time.
//
//   pnpm --filter @allot/stats build && node packages/stats/bench/overhead.mjs
import { PerformanceObserver } from 'node:perf_hooks';
import { median } from '@allot/tooling/bench';
import { withStats } from '../dist/index.js';

const PAIRS = Number(process.env.PAIRS ?? 2_000_000);
const STACK_PAIRS = 20_000;
const RUNS = Number(process.env.RUNS ?? 9);
const SLOT = 64;
const SLOTS = 1024;
const BASE = 2 ** 40;

/** Fixed-size slots, LIFO free list: a few nanoseconds per operation. */
function slotPool() {
  const free = new Float64Array(SLOTS);
  const live = new Uint8Array(SLOTS);
  let top = 0;
  const init = () => {
    top = SLOTS;
    for (let i = 0; i < SLOTS; i++) free[i] = BASE + (SLOTS - 1 - i) * SLOT;
    live.fill(0);
  };
  init();
  const index = (address) => (address - BASE) / SLOT;
  return {
    alignment: 8,
    allocate(size) {
      if (size > SLOT || top === 0) return null;
      const address = free[--top];
      live[index(address)] = 1;
      return address;
    },
    free(address) {
      const i = index(address);
      if (!(i >= 0 && i < SLOTS && live[i] === 1)) throw new Error('invalid free');
      live[i] = 0;
      free[top++] = address;
    },
    usableSize: () => SLOT,
    owns: (address) => live[index(address)] === 1,
    usage: () => ({
      capacity: SLOTS * SLOT,
      allocatedBytes: (SLOTS - top) * SLOT,
      freeBytes: top * SLOT,
      overheadBytes: 0,
      largestFreeBlock: top > 0 ? SLOT : 0,
      liveCount: SLOTS - top,
      freeBlockCount: top,
    }),
    reset: init,
  };
}

/** CPU nanoseconds (user + system) since `start`, a `process.cpuUsage()` reading. */
function cpuNs(start) {
  const elapsed = process.cpuUsage(start);
  return (elapsed.user + elapsed.system) * 1000;
}

// One loop per variant, so each call site stays monomorphic.
function pairsBare(a, n) {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) a.free(a.allocate(SLOT));
  return cpuNs(t);
}
function pairsStats(a, n) {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) a.free(a.allocate(SLOT));
  return cpuNs(t);
}
function pairsTraced(a, n) {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) a.free(a.allocate(SLOT));
  return cpuNs(t);
}
function pairsStacks(a, n) {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) a.free(a.allocate(SLOT));
  return cpuNs(t);
}

let gcs = 0;
let counting = false;
new PerformanceObserver((list) => {
  if (counting) gcs += list.getEntries().length;
}).observe({ entryTypes: ['gc'] });

const bare = slotPool();
const stats = withStats(slotPool());
const traced = withStats(slotPool(), { trace: { capacity: 1 << 16 } });
const stacks = withStats(slotPool(), { trace: { capacity: 1 << 12, stacks: true } });

// Warm up every variant.
for (let r = 0; r < 3; r++) {
  pairsBare(bare, PAIRS / 4);
  pairsStats(stats, PAIRS / 4);
  pairsTraced(traced, PAIRS / 4);
  pairsStacks(stacks, STACK_PAIRS / 4);
}

const results = { bare: [], stats: [], traced: [], stacks: [], added: [], perEvent: [], ratio: [] };
let statsGcs = 0;
for (let r = 0; r < RUNS; r++) {
  const b = pairsBare(bare, PAIRS) / (2 * PAIRS);
  gcs = 0;
  counting = true;
  const s = pairsStats(stats, PAIRS) / (2 * PAIRS);
  counting = false;
  await new Promise((resolve) => setTimeout(resolve, 0)); // let the observer deliver
  statsGcs += gcs;
  const t = pairsTraced(traced, PAIRS) / (2 * PAIRS);
  const k = pairsStacks(stacks, STACK_PAIRS) / (2 * STACK_PAIRS);
  results.bare.push(b);
  results.stats.push(s);
  results.traced.push(t);
  results.stacks.push(k);
  results.added.push(s - b);
  results.ratio.push(s / b);
  // A pair records two events (alloc; free, kept as one entry and exported as two).
  results.perEvent.push(t - s);
}

const f = (x) => x.toFixed(1);
console.log(
  `node ${process.version}, ${PAIRS.toLocaleString('en')} pairs x ${RUNS} runs (medians)`,
);
console.log(`bare upstream              ${f(median(results.bare))} ns/op`);
console.log(`withStats, tracing off     ${f(median(results.stats))} ns/op`);
console.log(
  `  added by withStats       ${f(median(results.added))} ns/op (x${median(results.ratio).toFixed(2)})`,
);
console.log(`withStats, tracing on      ${f(median(results.traced))} ns/op`);
console.log(`  added per trace event    ${f(median(results.perEvent))} ns/event`);
console.log(`tracing with stack traces  ${f(median(results.stacks))} ns/op`);
console.log(
  `GCs during tracing-off runs: ${statsGcs} (over ${(RUNS * PAIRS * 2).toLocaleString('en')} ops)`,
);
