// Thread cache with 1, 2 and 4 workers, against the naive design (every operation takes the
// central lock): each worker runs the random mix (log-uniform 16 B – 8 KiB) on its own live set
// after a common start barrier. Reports total throughput (operations per second over the slowest
// worker's wall time), lock acquisitions per operation and the contended-acquisition rate, medians
// of several runs. On a machine with fewer cores than workers, workers share cores: read the
// figures as what this machine does, not as scaling.
//
//   pnpm --filter @allot/thread-cache build && node packages/thread-cache/bench/workers.mjs

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { median } from '@allot/tooling/bench';
import { sharedHeap } from '../dist/index.js';

const LIVE = 2000;
const STEPS = 400_000;
const RUNS = 5;
const MAX_SIZE = 8192;

async function run(workers, naive, seed) {
  const heap = sharedHeap({ capacity: 256 << 20 });
  const barrier = new SharedArrayBuffer(8);
  const words = new Int32Array(barrier);
  const results = [];
  const threads = Array.from({ length: workers }, (_, i) => {
    const worker = new Worker(new URL('./mix-worker.mjs', import.meta.url), {
      workerData: {
        descriptor: heap.share(),
        barrier,
        seed: seed + i,
        live: LIVE,
        steps: STEPS,
        maxSize: MAX_SIZE,
        naive,
      },
    });
    return new Promise((resolve, reject) => {
      worker.on('message', (m) => results.push(m));
      worker.on('error', reject);
      worker.on('exit', resolve);
    });
  });
  while (Atomics.load(words, 1) < workers) await new Promise((r) => setTimeout(r, 5));
  const before = heap.stats();
  Atomics.store(words, 0, 1);
  Atomics.notify(words, 0);
  await Promise.all(threads);
  const after = heap.stats();
  const operations = results.reduce((sum, r) => sum + r.operations, 0);
  const wall = Math.max(...results.map((r) => r.elapsed));
  // Lock figures over the whole run (set-up and teardown included), per timed operation.
  const locks = after.lockAcquisitions - before.lockAcquisitions;
  const contended = after.contendedAcquisitions - before.contendedAcquisitions;
  return {
    mops: (operations / wall) * 1000,
    locksPerOp: locks / operations,
    contendedRate: locks === 0 ? 0 : contended / locks,
  };
}

console.log(
  `thread-cache workers (random mix 16 B – ${MAX_SIZE} B, ${LIVE} live and ${STEPS} steps per ` +
    `worker, median of ${RUNS} runs, node ${process.version}, ${availableParallelism()} CPUs)`,
);
console.log(
  '| workers | design | total Mops/s | lock acquisitions / op | contended acquisitions |',
);
console.log('| --- | --- | --- | --- | --- |');
for (const workers of [1, 2, 4]) {
  for (const naive of [false, true]) {
    const runs = [];
    for (let r = 0; r < RUNS; r++) runs.push(await run(workers, naive, 1000 * r));
    const design = naive ? 'naive (lock every op)' : 'thread cache';
    console.log(
      `| ${workers} | ${design} | ${median(runs.map((r) => r.mops)).toFixed(2)} | ` +
        `${median(runs.map((r) => r.locksPerOp)).toFixed(4)} | ` +
        `${(100 * median(runs.map((r) => r.contendedRate))).toFixed(1)} % |`,
    );
  }
}
