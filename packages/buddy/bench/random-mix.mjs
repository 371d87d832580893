// Buddy, random mix: about 5,000 live blocks of log-uniform sizes (16 B – 64 KiB); each step frees
// a random live block and allocates a new one. Reports the median ns per operation (an allocate or
// a free) over several runs, in CPU time (process.cpuUsage), so other processes on a shared machine
// inflate it less than wall time. Seeded: every run replays the same operations.
//
//   pnpm --filter @allot/buddy build && node packages/buddy/bench/random-mix.mjs
//
// MIN_BLOCK (default 16) sets minBlockSize, and so the size of the state (12 bytes per unit);
// MAX_SIZE (default 65536) the largest request.
import { generator, logUniformSizes } from '@allot/tooling/bench';
import { buddy } from '../dist/index.js';

const LIVE = 5_000;
const STEPS = 400_000;
const RUNS = 7;
const MIN_SIZE = 16;
const MAX_SIZE = Number(process.env.MAX_SIZE ?? 65_536);
const MIN_BLOCK = Number(process.env.MIN_BLOCK ?? 16);
const CAPACITY = Number(process.env.CAPACITY ?? 2 ** 27);

const random = generator(42);
const initialSizes = logUniformSizes(random, LIVE, MIN_SIZE, MAX_SIZE);
const WARMUP = 100_000;
const victims = Int32Array.from({ length: WARMUP + STEPS }, () => Math.floor(random() * LIVE));
const sizes = logUniformSizes(random, WARMUP + STEPS, MIN_SIZE, MAX_SIZE);

function steps(heap, live, from, to) {
  for (let s = from; s < to; s++) {
    const v = victims[s];
    heap.free(live[v]);
    const address = heap.allocate(sizes[s]);
    if (address === null) throw new Error('out of memory');
    live[v] = address;
  }
}

function run() {
  const heap = buddy({ capacity: CAPACITY, base: 2 ** 40, minBlockSize: MIN_BLOCK });
  const live = new Float64Array(LIVE);
  for (let i = 0; i < LIVE; i++) live[i] = heap.allocate(initialSizes[i]);
  // Untimed warm-up: the steady state, with the state's pages touched and the code optimised.
  steps(heap, live, 0, WARMUP);
  const start = process.cpuUsage();
  steps(heap, live, WARMUP, WARMUP + STEPS);
  const elapsed = process.cpuUsage(start);
  return ((elapsed.user + elapsed.system) * 1000) / (2 * STEPS);
}

const results = [];
for (let r = 0; r < RUNS; r++) results.push(run());
results.sort((a, b) => a - b);
const median = results[Math.floor(RUNS / 2)];
console.log(
  `buddy random mix (${LIVE} live, minBlockSize ${MIN_BLOCK}, ${STEPS} steps × ${RUNS} runs, ` +
    `node ${process.version}): ` +
    `median ${median.toFixed(1)} ns/op (min ${results[0].toFixed(1)}, max ${results[RUNS - 1].toFixed(1)})`,
);
