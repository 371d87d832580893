// Slab, same-size pairs: allocate one object and free it at once, over and over. Reports the
// median ns per allocate+free pair over several runs, beside a bump allocator (the floor of any JS
// allocation) at addresses of the same magnitude, the two alternated run by run. Each run is a
// process of its own holding one allocator, so the loop's call sites stay monomorphic (one loop
// shared by two allocators would measure V8's polymorphic dispatch instead), warmed up untimed
// first. Times are CPU time (process.cpuUsage), so other processes on a shared machine inflate them
// less than wall time.
//
//   pnpm --filter @allot/buddy --filter @allot/slab build && node packages/slab/bench/same-size-pairs.mjs
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { buddy } from '@allot/buddy';
import { median } from '@allot/tooling/bench';
import { slab } from '../dist/index.js';

const PAIRS = 5_000_000;
const RUNS = 9;
const SIZES = (process.env.SIZES ?? '16,64,100,4096').split(',').map(Number);

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

/** CPU ns per allocate+free pair of `allocator`, over `pairs` pairs. */
function time(allocator, size, pairs) {
  const start = process.cpuUsage();
  let check = 0;
  for (let i = 0; i < pairs; i++) {
    const address = allocator.allocate(size);
    check += address;
    allocator.free(address);
  }
  const elapsed = process.cpuUsage(start);
  if (Number.isNaN(check)) throw new Error('unreachable');
  return ((elapsed.user + elapsed.system) * 1000) / pairs;
}

if (process.argv[2] === '--one') {
  // One run: `--one bump|slab SIZE`, its ns/pair on stdout.
  const size = Number(process.argv[4]);
  const allocator =
    process.argv[3] === 'bump'
      ? bump(2 ** 40, 2 ** 30)
      : slab({ upstream: buddy({ capacity: 1 << 26, base: 2 ** 41, minBlockSize: 4096 }) });
  time(allocator, size, PAIRS / 5);
  process.stdout.write(String(time(allocator, size, PAIRS)));
} else {
  const self = fileURLToPath(import.meta.url);
  const run = (which, size) =>
    Number(
      execFileSync(process.execPath, [self, '--one', which, String(size)], { encoding: 'utf8' }),
    );
  for (const size of SIZES) {
    const slabTimes = [];
    const bumpTimes = [];
    for (let r = 0; r < RUNS; r++) {
      bumpTimes.push(run('bump', size));
      slabTimes.push(run('slab', size));
    }
    const s = median(slabTimes);
    const b = median(bumpTimes);
    console.log(
      `slab same-size pairs, ${size} B (node ${process.version}): median ${s.toFixed(1)} ns/pair, ` +
        `bump ${b.toFixed(1)} ns/pair, ratio ${(s / b).toFixed(2)}`,
    );
  }
}
