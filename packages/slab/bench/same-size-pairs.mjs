// Slab, same-size pairs: allocate one object and free it at once, over and over. Reports the
// median ns per allocate+free pair over several runs, beside a bump allocator (the floor of any JS
// allocation) at the same addresses, measured in the same process. Times are CPU time
// (process.cpuUsage), so other processes on a shared machine inflate them less than wall time.
//
//   pnpm --filter @allot/buddy --filter @allot/slab build && node packages/slab/bench/same-size-pairs.mjs
import { buddy } from '@allot/buddy';
import { slab } from '../dist/index.js';

const PAIRS = 5_000_000;
const RUNS = 9;
const SIZES = (process.env.SIZES ?? '16,64,100,4096').split(',').map(Number);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** A bump allocator: the cheapest thing that returns an address. */
function bump(base, capacity) {
  let top = base;
  return {
    allocate(size) {
      const address = top;
      top = top + size > base + capacity ? base : top + size;
      return address;
    },
    free() {},
  };
}

/**
 * A timing loop of its own for each allocator, so that each call site stays monomorphic (one loop
 * shared by two allocators would measure V8's polymorphic dispatch instead).
 */
function makeTimer() {
  return new Function(
    'allocator',
    'size',
    'pairs',
    `const start = process.cpuUsage();
    let check = 0;
    for (let i = 0; i < pairs; i++) {
      const address = allocator.allocate(size);
      check += address;
      allocator.free(address);
    }
    const elapsed = process.cpuUsage(start);
    if (Number.isNaN(check)) throw new Error('unreachable');
    return ((elapsed.user + elapsed.system) * 1000) / pairs;`,
  );
}

const floor = bump(2 ** 40, 2 ** 30);
const objects = slab({ upstream: buddy({ capacity: 1 << 26, base: 2 ** 41, minBlockSize: 4096 }) });
for (const size of SIZES) {
  const timeBump = makeTimer();
  const timeSlab = makeTimer();
  const slabTimes = [];
  const bumpTimes = [];
  for (let r = 0; r < RUNS; r++) {
    bumpTimes.push(timeBump(floor, size, PAIRS));
    slabTimes.push(timeSlab(objects, size, PAIRS));
  }
  const s = median(slabTimes);
  const b = median(bumpTimes);
  console.log(
    `slab same-size pairs, ${size} B (node ${process.version}): median ${s.toFixed(1)} ns/pair, ` +
      `bump ${b.toFixed(1)} ns/pair, ratio ${(s / b).toFixed(2)}`,
  );
}
