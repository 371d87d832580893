// A worker of bench/workers.mjs: runs the random mix on its own live set, through a thread cache
// or (naive) straight on the heap, after a start barrier; reports its elapsed wall time.
import { parentPort, workerData } from 'node:worker_threads';
import { generator, logUniformSizes } from '@allot/tooling/bench';
import { attachHeap, threadCache } from '../dist/index.js';

const { descriptor, barrier, seed, live: LIVE, steps: STEPS, maxSize, naive } = workerData;
const heap = attachHeap(descriptor);
const allocator = naive ? heap : threadCache(heap);
const random = generator(seed);
const sizes = logUniformSizes(random, STEPS, 16, maxSize);
const victims = Int32Array.from({ length: STEPS }, () => Math.floor(random() * LIVE));
const live = new Float64Array(LIVE);
for (let i = 0; i < LIVE; i++) live[i] = allocator.allocate(sizes[i]);

function steps(from, to) {
  for (let s = from; s < to; s++) {
    const v = victims[s];
    allocator.free(live[v]);
    const address = allocator.allocate(sizes[s]);
    if (address === null) throw new Error('out of memory');
    live[v] = address;
  }
}
steps(0, STEPS / 10); // warm-up

const words = new Int32Array(barrier);
Atomics.add(words, 1, 1);
Atomics.notify(words, 1);
Atomics.wait(words, 0, 0);
const start = process.hrtime.bigint();
steps(STEPS / 10, STEPS);
const elapsed = Number(process.hrtime.bigint() - start);
const own = naive ? null : allocator.stats();
for (let i = 0; i < LIVE; i++) allocator.free(live[i]);
if (!naive) allocator[Symbol.dispose]();
parentPort.postMessage({ elapsed, operations: 2 * (STEPS - STEPS / 10), own });
