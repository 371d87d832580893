// First-touch and rewrite bandwidth from one node's CPUs to memory bound to each node: what a
// remote NUMA node costs on this machine. The process pins itself to the first node with CPUs and
// memory (through `taskset`, from util-linux), then, for each node with memory, binds a region there
// with prefault off, times the first write of every byte (each page faults in on the bound node),
// then a second write. Median of RUNS, each on a fresh region; the pages are checked to be on the
// node with move_pages before a figure is printed.
//
// Run on a machine with two or more NUMA nodes (on one node it measures local memory only):
//   pnpm --filter @allot/numa build && node packages/numa/bench/first-touch.mjs [MiB]
// In the two-node QEMU VM of `pnpm test:numa:vm` the figures are the emulator's, not memory's: both
// nodes are the same host memory there.
import { spawnSync } from 'node:child_process';
import { median } from '@allot/tooling/bench';
import { numaSource, placement, topology } from '../dist/index.js';

const MiB = 1024 * 1024;
const RUNS = 5;
const bytes = Number(process.argv[2] ?? 256) * MiB;

const topo = topology();
const home = topo.nodes.find((node) => node.hasMemory && node.cpus.length > 0);
if (!home) throw new Error('no NUMA node has both CPUs and memory');

if (process.env.ALLOT_BENCH_PINNED !== '1') {
  // Again, on the home node's CPUs only, so every first touch comes from there.
  const cpus = home.cpus.join(',');
  const run = spawnSync('taskset', ['-c', cpus, process.execPath, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, ALLOT_BENCH_PINNED: '1' },
  });
  if (run.error) throw new Error(`taskset -c ${cpus} could not run: ${run.error.message}`);
  process.exit(run.status ?? 1);
}

/** Seconds that `write` takes. */
function timed(write) {
  const started = process.hrtime.bigint();
  write();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const gbs = (seconds) => (bytes / seconds / 1e9).toFixed(2);
console.log(
  `first-touch bandwidth, ${bytes / MiB} MiB, from node ${home.id}'s CPUs (${home.cpus.join(',')}), ` +
    `median of ${RUNS}; Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`,
);
for (const node of topo.memoryNodes()) {
  const firstTouch = [];
  const rewrite = [];
  for (let run = 0; run < RUNS; run++) {
    const source = numaSource({ node, prefault: false });
    try {
      const region = source.acquire(bytes);
      if (!region) throw new Error(`node ${node} has no ${bytes / MiB} MiB free`);
      firstTouch.push(timed(() => region.bytes.fill(1)));
      rewrite.push(timed(() => region.bytes.fill(2)));
      const where = placement(region);
      const elsewhere = where.pages - (where.byNode[node] ?? 0);
      if (elsewhere > 0) {
        throw new Error(`${elsewhere} of ${where.pages} pages are not on node ${node}`);
      }
    } finally {
      source.close();
    }
  }
  console.log(
    `node ${home.id} CPUs → node ${node} memory (distance ${topo.distance(home.id, node)}): ` +
      `first touch ${gbs(median(firstTouch))} GB/s, rewrite ${gbs(median(rewrite))} GB/s`,
  );
}
