// GPU benchmarks (needs an NVIDIA GPU and driver): per-operation cost of a cached allocation vs
// cudaMalloc + cudaFree vs cudaMallocAsync + cudaFreeAsync, and the synthetic transformer training
// loop replayed on real device memory through cachingDeviceAllocator. Median of 7 runs.
// Run: pnpm --filter @allot/cuda build && node packages/cuda/bench/gpu.mjs [steps]

import { nsPerCall } from '@allot/tooling/bench';
import { replay, trainingLoop } from '@allot/workloads';
import { cachingDeviceAllocator } from '../dist/caching.js';
import {
  createStream,
  cudaStatus,
  deviceSource,
  devices,
  memoryPoolSource,
} from '../dist/index.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const status = cudaStatus();
if (!status.available) {
  console.error(`CUDA is not available here:\n${status.error?.message}`);
  process.exit(2);
}

const [device] = devices();
console.log(
  `node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${device.name} (${(device.totalMemory / GiB).toFixed(1)} GiB), runtime ${status.runtimeVersion}, driver ${status.driverVersion}`,
);
console.log('\nallocate + free, ns per pair (median of 7 runs):');
console.log(
  '| size | cached (cachingDeviceAllocator) | cudaMalloc + cudaFree | cudaMallocAsync + cudaFreeAsync | cudaMalloc / cached |',
);
console.log('| ---: | ---: | ---: | ---: | ---: |');
const allocator = cachingDeviceAllocator({ config: '' });
const source = deviceSource();
const stream = createStream();
const pool = memoryPoolSource({ stream, releaseThreshold: 4 * GiB });
for (const size of [4096, 1 * MiB, 16 * MiB, 256 * MiB]) {
  allocator.free(allocator.allocate(size));
  const cached = nsPerCall(() => allocator.free(allocator.allocate(size)), 200_000);
  const plain = nsPerCall(
    () => source.release(source.acquire(size)),
    size >= 16 * MiB ? 200 : 2_000,
  );
  const async = nsPerCall(() => pool.freeAsync(pool.allocateAsync(size, stream), stream), 20_000);
  stream.synchronize();
  console.log(
    `| ${size >= MiB ? `${size / MiB} MiB` : `${size / 1024} KiB`} | ${cached.toFixed(0)} | ${plain.toFixed(0)} | ${async.toFixed(0)} | ${(plain / cached).toFixed(0)}× |`,
  );
}
allocator.dispose();

const steps = Number(process.argv[2] ?? 200);
console.log(
  `\ntraining loop on device memory (12 layers, hidden 1024, batch 8, seq 64–1024, seed 7), ${steps} steps:`,
);
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
for (const config of ['', 'expandable_segments:True', 'roundup_power2_divisions:[64:8,>:4]']) {
  const a = cachingDeviceAllocator({ config });
  const start = process.hrtime.bigint();
  const result = replay(trace, a);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const s = a.memoryStats();
  console.log(
    `  ${(config || '(default)').padEnd(40)} ${ms.toFixed(0)} ms for ${result.events} events (${((ms * 1e6) / result.events).toFixed(0)} ns each), ` +
      `peak reserved ${(s['reserved_bytes.all.peak'] / GiB).toFixed(2)} GiB / peak allocated ${(s['allocated_bytes.all.peak'] / GiB).toFixed(2)} GiB, ` +
      `${s.num_device_alloc} device allocations, ${result.failures} failures, expandable: ${a.expandableSegments}`,
  );
  a.emptyCache();
}
