// Thread cache, cache hits: allocate and free the same size in a loop, on one thread. After the
// first refill every call is a hit (no lock, no atomic). Reports the median ns per alloc+free pair
// over several runs, in CPU time.
//
//   pnpm --filter @allot/thread-cache build && node packages/thread-cache/bench/cache-hit-pairs.mjs
//
// SIZE (default 64) sets the request size.

import { cpuNanoseconds, median } from '@allot/tooling/bench';
import { sharedHeap, threadCache } from '../dist/index.js';

const SIZE = Number(process.env.SIZE ?? 64);
const PAIRS = 5_000_000;
const RUNS = 9;

const heap = sharedHeap({ capacity: 64 << 20 });
const cache = threadCache(heap);

function pairs(count) {
  for (let i = 0; i < count; i++) cache.free(cache.allocate(SIZE));
}

pairs(PAIRS); // warm-up: refill once, let the optimiser settle
const results = [];
for (let r = 0; r < RUNS; r++) results.push(cpuNanoseconds(() => pairs(PAIRS)) / PAIRS);
const stats = cache.stats();
console.log(
  `thread-cache hit pairs (${SIZE} B, ${PAIRS} pairs × ${RUNS} runs, node ${process.version}): ` +
    `median ${median(results).toFixed(2)} ns/pair (min ${Math.min(...results).toFixed(2)}, ` +
    `max ${Math.max(...results).toFixed(2)}); lock acquisitions ${stats.lockAcquisitions} for ` +
    `${stats.hits + stats.misses} operations`,
);
