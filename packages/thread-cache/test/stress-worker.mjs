// A worker of the multi-worker stress tests. It attaches to the shared heap it is given, makes its
// own thread cache, and runs one role (seeded, so every run replays the same operations):
//
// - `own`: allocates blocks of log-uniform sizes (a few above the largest class), fills every byte
//   with its id and a sequence number (alternating bytes), and frees in random order, verifying
//   each block's bytes before freeing it.
// - `producer` / `consumer`: the producer fills blocks and hands their addresses to its consumer
//   through a shared ring (an `Atomics.store` of the head, read by an `Atomics.load`); the consumer
//   verifies and frees them: every one of those frees is a cross-worker free.
// - `victim`: allocates, frees some blocks into its cache, publishes the addresses it still holds,
//   then loops over its blocks verifying them until it is terminated.
// - `waiter`: tries to make a cache while a dead worker holds the heap's lock, and reports the error.
//
// It imports the built package (`../dist/index.js`); the test's global setup builds it when stale.
import { parentPort, workerData } from 'node:worker_threads';
import { generator } from '@allot/tooling/bench';
import { attachHeap, threadCache } from '../dist/index.js';

const { descriptor, id, seed, role, operations, maxLive, ring, control } = workerData;

const random = generator(seed);

/** Mostly small sizes (log-uniform 1 B – 2 KiB), some up to 8 KiB, a few large blocks. */
function nextSize() {
  const r = random();
  const top = r < 0.9 ? 2048 : r < 0.98 ? 8192 : 65536;
  return Math.max(1, Math.round(Math.exp(random() * Math.log(top))));
}

const heap = attachHeap(descriptor);

if (role === 'waiter') {
  // Tries to use a heap whose lock a dead worker holds: it must wake up and fail, not hang.
  try {
    const cache = threadCache(heap);
    cache.allocate(100);
    parentPort.postMessage({ id, error: null });
  } catch (error) {
    parentPort.postMessage({ id, error: error.code ?? String(error) });
  }
  process.exit(0);
}

const cache = threadCache(heap);

function fill(address, size, owner, sequence) {
  const bytes = cache.view(address, size);
  const low = sequence & 255;
  for (let i = 0; i < size; i += 2) bytes[i] = owner;
  for (let i = 1; i < size; i += 2) bytes[i] = low;
}

function verify(address, size, owner, sequence) {
  const bytes = cache.view(address, size);
  const low = sequence & 255;
  for (let i = 0; i < size; i++) {
    const expected = (i & 1) === 0 ? owner : low;
    if (bytes[i] !== expected) {
      throw new Error(
        `worker ${id}: byte ${i} of block 0x${address.toString(16)} (${size} B, owner ${owner}, ` +
          `sequence ${sequence}) is ${bytes[i]}, expected ${expected}: another block wrote into it`,
      );
    }
  }
}

let checked = 0;
let sequence = 0;

function allocateFilled(live) {
  const size = nextSize();
  const address = cache.allocate(size);
  if (address === null) throw new Error(`worker ${id}: out of memory allocating ${size} B`);
  fill(address, size, id, sequence);
  live.push({ address, size, sequence });
  sequence++;
}

function freeAt(live, index) {
  const block = live[index];
  verify(block.address, block.size, id, block.sequence);
  checked++;
  live[index] = live[live.length - 1];
  live.pop();
  cache.free(block.address);
}

function runOwn() {
  const live = [];
  for (let step = 0; step < operations; step++) {
    const grow = live.length === 0 || (live.length < maxLive && random() < 0.55);
    if (grow) allocateFilled(live);
    else freeAt(live, Math.floor(random() * live.length));
  }
  while (live.length > 0) freeAt(live, Math.floor(random() * live.length));
}

// Ring layout: Int32 words [head, tail], then per entry three f64 (address, size, sequence).
const HEAD = 0;
const TAIL = 1;
const WAIT_MS = 20;

function ringViews() {
  return {
    words: new Int32Array(ring, 0, 2),
    entries: new Float64Array(ring, 8),
    capacity: (ring.byteLength - 8) / 24,
  };
}

function runProducer() {
  const { words, entries, capacity } = ringViews();
  const live = [];
  for (let n = 0; n < operations; n++) {
    // Some churn of its own between hand-offs.
    if (live.length > 0 && random() < 0.3) freeAt(live, Math.floor(random() * live.length));
    else if (live.length < maxLive && random() < 0.3) allocateFilled(live);
    const size = nextSize();
    const address = cache.allocate(size);
    if (address === null) throw new Error(`producer ${id}: out of memory allocating ${size} B`);
    fill(address, size, id, sequence);
    const head = Atomics.load(words, HEAD);
    while (head - Atomics.load(words, TAIL) >= capacity) {
      Atomics.wait(words, TAIL, Atomics.load(words, TAIL), WAIT_MS);
    }
    const slot = (head % capacity) * 3;
    entries[slot] = address;
    entries[slot + 1] = size;
    entries[slot + 2] = sequence;
    sequence++;
    Atomics.store(words, HEAD, head + 1);
    Atomics.notify(words, HEAD);
  }
  while (live.length > 0) freeAt(live, Math.floor(random() * live.length));
}

function runConsumer(producerId) {
  const { words, entries, capacity } = ringViews();
  const live = [];
  for (let n = 0; n < operations; n++) {
    let head = Atomics.load(words, HEAD);
    while (head === n) {
      Atomics.wait(words, HEAD, n, WAIT_MS);
      head = Atomics.load(words, HEAD);
    }
    const slot = (n % capacity) * 3;
    const address = entries[slot];
    const size = entries[slot + 1];
    const blockSequence = entries[slot + 2];
    Atomics.store(words, TAIL, n + 1);
    Atomics.notify(words, TAIL);
    verify(address, size, producerId, blockSequence);
    checked++;
    cache.free(address); // a block allocated in another worker
    // Reuse what it frees: allocations of its own, from objects the producer's blocks became.
    if (live.length < maxLive && random() < 0.5) allocateFilled(live);
    else if (live.length > 0) freeAt(live, Math.floor(random() * live.length));
  }
  while (live.length > 0) freeAt(live, Math.floor(random() * live.length));
}

// Victim control: Int32 words [ready, liveCount, workerId], then f64 pairs (address, size) of
// the blocks it holds.
function runVictim() {
  const words = new Int32Array(control, 0, 3);
  const held = new Float64Array(control, 16);
  const live = [];
  for (let i = 0; i < operations; i++) allocateFilled(live);
  // Free about half into the cache: those objects are what reclaim must recover.
  for (let i = live.length - 1; i >= 0; i--) if (random() < 0.5) freeAt(live, i);
  for (let i = 0; i < live.length; i++) held[i * 2] = live[i].address;
  for (let i = 0; i < live.length; i++) held[i * 2 + 1] = live[i].size;
  Atomics.store(words, 1, live.length);
  Atomics.store(words, 2, cache.workerId);
  Atomics.store(words, 0, 1);
  Atomics.notify(words, 0);
  // Mid-run until terminated: busy with its blocks, never holding the heap's lock.
  for (;;) {
    for (const block of live) verify(block.address, block.size, id, block.sequence);
  }
}

if (role === 'own') runOwn();
else if (role === 'producer') runProducer();
else if (role === 'consumer') runConsumer(workerData.producerId);
else if (role === 'victim') runVictim();
else throw new Error(`unknown role ${role}`);

const stats = cache.stats();
cache[Symbol.dispose]();
parentPort.postMessage({ id, checked, stats });
