/**
 * Tests that need two or more NUMA nodes: `pnpm test:numa` (ALLOT_NUMA_MULTI=1). Anywhere else,
 * and in the default `pnpm test`, they are skipped with a message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numaNative } from './ffi/native';
import { numaSource } from './numa-source';
import { memoryPolicy, placement } from './placement';
import { BACKENDS, MiB } from './test-support/environment';
import { topology } from './topology';

const requested = process.env.ALLOT_NUMA_MULTI === '1';
const topo = topology();
const memoryNodes = topo.memoryNodes();
const runnable = requested && memoryNodes.length >= 2;
if (!runnable) {
  console.log(
    requested
      ? `multi-node tests skipped: this machine has ${memoryNodes.length} NUMA node(s) with memory (${memoryNodes.join(', ')}); they need 2 or more`
      : 'multi-node tests skipped: run them with `pnpm test:numa` (ALLOT_NUMA_MULTI=1) on a machine with 2 or more NUMA nodes',
  );
}

/** Bytes touched per bandwidth measurement. */
const BANDWIDTH_BYTES = 256 * MiB;

describe.skipIf(!runnable)('on every NUMA node', () => {
  for (const { name, libnuma } of BACKENDS) {
    for (const node of memoryNodes) {
      it(`binds 64 MiB to node ${node} with every page there (${name})`, () => {
        const source = numaSource({ node, libnuma });
        try {
          const region = source.acquire(64 * MiB)!;
          expect(memoryPolicy(region, { libnuma })).toEqual({ mode: 'bind', nodes: [node] });
          const where = placement(region, { libnuma });
          expect(where.byNode).toEqual({ [node]: where.pages });
        } finally {
          source.close();
        }
      });
    }
  }

  describe('first-touch bandwidth, local vs remote', () => {
    const native = numaNative();
    const home = topo.nodes.find((n) => n.hasMemory && n.cpus.length > 0)!;
    let saved: number[] = [];
    beforeAll(() => {
      saved = native.affinity();
      native.setAffinity(home.cpus); // run on the home node's CPUs only
    });
    afterAll(() => native.setAffinity(saved));

    it(`from node ${home.id}'s CPUs to memory on each node (printed, not asserted)`, () => {
      const lines: string[] = [];
      for (const node of memoryNodes) {
        const source = numaSource({ node, prefault: false });
        try {
          const region = source.acquire(BANDWIDTH_BYTES)!;
          const started = process.hrtime.bigint();
          region.bytes.fill(1); // every page faults in here, on `node` despite the CPU's node
          const firstTouch = Number(process.hrtime.bigint() - started) / 1e9;
          const again = process.hrtime.bigint();
          region.bytes.fill(2);
          const rewrite = Number(process.hrtime.bigint() - again) / 1e9;
          const where = placement(region);
          expect(where.byNode).toEqual({ [node]: where.pages });
          const gbs = (seconds: number) => (BANDWIDTH_BYTES / seconds / 1e9).toFixed(2);
          lines.push(
            `node ${home.id} CPUs → node ${node} memory (distance ${topo.distance(home.id, node)}): ` +
              `first touch ${gbs(firstTouch)} GB/s, rewrite ${gbs(rewrite)} GB/s`,
          );
        } finally {
          source.close();
        }
      }
      console.log(`first-touch bandwidth, ${BANDWIDTH_BYTES / MiB} MiB each:\n${lines.join('\n')}`);
    });
  });
});
