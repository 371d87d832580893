// @allot/caching benchmarks: cache-hit cost over the host source, and peak reserved / peak
// allocated on a synthetic transformer training loop for several settings.
// Run: pnpm --filter @allot/caching build && node packages/caching/bench/caching.mjs [steps]
import { hostSource } from '@allot/core';
import { median } from '@allot/tooling/bench';
import { replay, trainingLoop } from '@allot/workloads';
import { cachingPool } from '../dist/index.js';

const RUNS = 7;
const PAIRS = 2_000_000;
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** ns per allocate + free pair of sizes the pool has cached before. */
function cacheHit(sizes) {
  const pool = cachingPool({ source: hostSource(), config: '' });
  const held = sizes.map((s) => pool.allocate(s)); // warm: every size has a cached block
  for (const a of held) pool.free(a);
  const n = sizes.length;
  const times = [];
  for (let run = 0; run < RUNS; run++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < PAIRS; i++) pool.free(pool.allocate(sizes[i % n]));
    times.push(Number(process.hrtime.bigint() - start) / PAIRS);
  }
  return median(times);
}

/**
 * An address-only source for replays: segments get addresses and sizes but no bytes, so a
 * multi-gigabyte training loop can be simulated. Grows in place up to 64 GiB per region; refuses
 * past `limit` bytes reserved.
 */
function virtualSource(limit) {
  let next = 2 ** 40;
  let reserved = 0;
  return {
    kind: 'virtual',
    granularity: 2 * MiB,
    hostAccessible: false,
    acquire(size) {
      if (reserved + size > limit) return null;
      const region = { address: next, size: Math.ceil(size / (2 * MiB)) * 2 * MiB };
      next += 64 * GiB;
      reserved += region.size;
      return region;
    },
    release(region) {
      reserved -= region.size;
    },
    grow(region, newSize) {
      const size = Math.ceil(newSize / (2 * MiB)) * 2 * MiB;
      if (size > 64 * GiB || reserved + size - region.size > limit) return false;
      reserved += size - region.size;
      region.size = size;
      return true;
    },
    reservedBytes: () => reserved,
  };
}

function training(steps, config) {
  const trace = trainingLoop({
    layers: 12,
    hidden: 1024,
    heads: 16,
    vocab: 32000,
    batchSize: 8,
    minSeqLen: 64,
    maxSeqLen: 1024,
    steps,
    seed: 7,
  });
  // An 80 GiB device, as a large GPU: the out-of-memory path runs only when it fills up.
  const pool = cachingPool({ source: virtualSource(80 * GiB), config, totalMemory: 80 * GiB });
  const result = replay(trace, pool);
  const s = pool.memoryStats();
  return {
    config: config || '(default)',
    events: result.events,
    failures: result.failures,
    peakRequested: result.peakLiveBytes,
    peakAllocated: s['allocated_bytes.all.peak'],
    peakReserved: s['reserved_bytes.all.peak'],
    segments: s['segment.all.peak'],
  };
}

const steps = Number(process.argv[2] ?? 1000);
console.log(`node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
console.log('\ncache hit, allocate + free of a size cached before (median of 7 runs):');
console.log(`  one size (4 KiB)         ${cacheHit([4096]).toFixed(1)} ns per pair`);
console.log(
  `  eight sizes (512 B–8 MiB) ${cacheHit([512, 3000, 4096, 65536, 200000, 1 << 20, 3 << 20, 8 << 20]).toFixed(1)} ns per pair`,
);

console.log(`\ntraining loop (12 layers, hidden 1024, batch 8, seq 64–1024), ${steps} steps:`);
const configs = [
  '',
  'expandable_segments:True',
  'max_split_size_mb:256',
  'roundup_power2_divisions:[64:8,>:4]',
  'expandable_segments:True,roundup_power2_divisions:[64:8,>:4]',
];
for (const config of configs) {
  const r = training(steps, config);
  console.log(
    `  ${r.config.padEnd(62)} peak reserved ${(r.peakReserved / GiB).toFixed(2)} GiB / ` +
      `peak allocated ${(r.peakAllocated / GiB).toFixed(2)} GiB = ` +
      `${(r.peakReserved / r.peakAllocated).toFixed(3)}×` +
      `  (requested ${(r.peakRequested / GiB).toFixed(2)} GiB, ${r.segments} segments, ${r.failures} failures)`,
  );
}
