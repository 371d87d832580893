// FFI overhead per native call, measured against the fake CUDA library (no GPU needed): each call
// below is one call into the library through koffi and the package's checked wrapper, so its time
// is the FFI's cost plus a few nanoseconds of work in the fake. Median of 7 runs.
// Run: pnpm --filter @allot/cuda build && node packages/cuda/bench/ffi-overhead.mjs

import { nsPerCall } from '@allot/tooling/bench';
import { cachingDeviceAllocator } from '../dist/caching.js';
import { createEvent, createStream, deviceSource } from '../dist/index.js';
import { buildFake } from './build-fake.mjs';

const RUNS = 7;
const CALLS = 1_000_000;
const cuda = { runtimePath: buildFake() };

/** ns per iteration of `body` (which makes `calls` native calls), median of RUNS. */
const measure = (body, iterations = CALLS) => nsPerCall(body, iterations, RUNS);

const stream = createStream(cuda);
const event = createEvent(cuda);
stream.record(event);
const source = deviceSource(cuda);
const allocator = cachingDeviceAllocator({ ...cuda, config: '' });
allocator.free(allocator.allocate(4096));

const rows = [
  ['cudaStreamQuery (stream.query)', 1, measure(() => stream.query())],
  ['cudaEventQuery (event.query)', 1, measure(() => event.query())],
  ['cudaEventRecord (stream.record)', 1, measure(() => stream.record(event))],
  [
    'cudaMalloc + cudaFree (deviceSource acquire + release, 1 MiB)',
    2,
    measure(() => source.release(source.acquire(1 << 20)), 200_000),
  ],
  [
    'cached allocate + free (cachingDeviceAllocator, 4 KiB; no native call)',
    0,
    measure(() => allocator.free(allocator.allocate(4096))),
  ],
];
console.log(
  `node ${process.version}, ${process.platform} ${process.arch}, ${new Date().toISOString().slice(0, 10)}, fake CUDA library`,
);
console.log('| call | native calls | ns per iteration | ns per native call |');
console.log('| --- | ---: | ---: | ---: |');
for (const [name, calls, ns] of rows) {
  console.log(
    `| ${name} | ${calls} | ${ns.toFixed(1)} | ${calls === 0 ? '–' : (ns / calls).toFixed(1)} |`,
  );
}
