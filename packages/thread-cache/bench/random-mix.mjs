// Thread cache, random mix across size classes on one thread: about 10,000 live blocks of
// log-uniform sizes (16 B – 8 KiB, every small class); each step frees a random live block and
// allocates a new one. Reports the median ns per operation (an allocate or a free) in CPU time,
// and lock acquisitions per operation.
//
//   pnpm --filter @allot/thread-cache build && node packages/thread-cache/bench/random-mix.mjs
//
// LIVE (default 10000) and MAX_SIZE (default 8192) change the set-up; NAIVE=1 measures the heap
// without a cache (the central lock on every operation).

import { cpuNanoseconds, generator, logUniformSizes, median } from '@allot/tooling/bench';
import { sharedHeap, threadCache } from '../dist/index.js';

const LIVE = Number(process.env.LIVE ?? 10_000);
const MAX_SIZE = Number(process.env.MAX_SIZE ?? 8192);
const NAIVE = process.env.NAIVE === '1';
const STEPS = 1_000_000;
const WARMUP = 200_000;
const RUNS = 7;

const random = generator(42);
const initialSizes = logUniformSizes(random, LIVE, 16, MAX_SIZE);
const sizes = logUniformSizes(random, WARMUP + STEPS, 16, MAX_SIZE);
const victims = Int32Array.from({ length: WARMUP + STEPS }, () => Math.floor(random() * LIVE));

function steps(allocator, live, from, to) {
  for (let s = from; s < to; s++) {
    const v = victims[s];
    allocator.free(live[v]);
    const address = allocator.allocate(sizes[s]);
    if (address === null) throw new Error('out of memory');
    live[v] = address;
  }
}

function run() {
  const heap = sharedHeap({ capacity: 256 << 20 });
  const allocator = NAIVE ? heap : threadCache(heap);
  const live = new Float64Array(LIVE);
  for (let i = 0; i < LIVE; i++) live[i] = allocator.allocate(initialSizes[i]);
  steps(allocator, live, 0, WARMUP);
  const locksBefore = heap.stats().lockAcquisitions;
  const ns = cpuNanoseconds(() => steps(allocator, live, WARMUP, WARMUP + STEPS));
  const locks = heap.stats().lockAcquisitions - locksBefore - 1; // less the stats() call itself
  return { nsPerOp: ns / (2 * STEPS), locksPerOp: locks / (2 * STEPS) };
}

const results = [];
for (let r = 0; r < RUNS; r++) results.push(run());
const ns = results.map((r) => r.nsPerOp);
const locks = median(results.map((r) => r.locksPerOp));
console.log(
  `thread-cache random mix${NAIVE ? ' (naive: heap without a cache)' : ''} (${LIVE} live, ` +
    `16 B – ${MAX_SIZE} B, ${STEPS} steps × ${RUNS} runs, node ${process.version}): ` +
    `median ${median(ns).toFixed(1)} ns/op (min ${Math.min(...ns).toFixed(1)}, ` +
    `max ${Math.max(...ns).toFixed(1)}); ${locks.toFixed(4)} lock acquisitions per op ` +
    `(1 per ${(1 / locks).toFixed(0)} ops)`,
);
