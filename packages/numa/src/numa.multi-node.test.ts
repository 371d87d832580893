/**
 * Tests that need two or more NUMA nodes: `pnpm test:numa` (ALLOT_NUMA_MULTI=1) on such a machine,
 * or `pnpm test:numa:vm`, which boots a two-node VM and runs them there (see vm/run.sh). Anywhere
 * else, and in the default `pnpm test`, they are skipped with a message.
 *
 * Every placement claim is checked page by page with move_pages(2), through {@link expectOnNode};
 * one test binds memory to the wrong node on purpose and shows that the check catches it.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError, type Region } from '@allot/core';
import { letGo } from '@allot/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachingHostAllocator } from './caching-host-allocator';
import { nodeOfCudaDevice } from './cuda-hooks';
import { NativeCallError } from './errors';
import { MPOL_BIND, MPOL_INTERLEAVE } from './ffi/constants';
import { numaNative } from './ffi/native';
import { numaSource } from './numa-source';
import { memoryPolicy, type Placement, placement } from './placement';
import { BACKENDS, canLock, MiB } from './test-support/environment';
import { nodeOfPciDevice, topology } from './topology';

const requested = process.env.ALLOT_NUMA_MULTI === '1';
const topo = topology();
const memoryNodes = topo.memoryNodes();
const runnable = requested && memoryNodes.length >= 2;
if (!runnable) {
  console.log(
    requested
      ? `multi-node tests skipped: this machine has ${memoryNodes.length} NUMA node(s) with memory (${memoryNodes.join(', ')}); they need 2 or more`
      : 'multi-node tests skipped: run them with `pnpm test:numa` (ALLOT_NUMA_MULTI=1) on a machine with 2 or more NUMA nodes, or `pnpm test:numa:vm`',
  );
}
/** The first two nodes with memory: "home" and "other" in the tests below. */
const home = memoryNodes[0] ?? 0;
const other = memoryNodes[1] ?? 1;

/** Bytes first touched on each node, and how many are written before the loop is let go. */
const FIRST_TOUCH_BYTES = 64 * MiB;
const FIRST_TOUCH_SLICE = 4 * MiB;
/** Most bytes the pressure test may fill to exhaust the other node (a VM's node, not a server's). */
const PRESSURE_LIMIT = Number(process.env.ALLOT_NUMA_PRESSURE_LIMIT ?? 8 * 1024 * MiB);

/** Whether every byte of `bytes` is `value`: a memcmp per MiB, not a callback per byte. */
function allBytesAre(bytes: Uint8Array, value: number): boolean {
  const pattern = Buffer.alloc(MiB, value);
  for (let at = 0; at < bytes.length; at += MiB) {
    const chunk = bytes.subarray(at, at + MiB);
    if (Buffer.compare(chunk, pattern.subarray(0, chunk.length)) !== 0) return false;
  }
  return true;
}

/** `N0=16384 N1=2` (as /proc/<pid>/numa_maps writes it), then pages without a node, if any. */
function describePlacement(where: Placement): string {
  const parts = Object.entries(where.byNode).map(([node, pages]) => `N${node}=${pages}`);
  if (where.notPresent > 0) parts.push(`not present=${where.notPresent}`);
  for (const [name, pages] of Object.entries(where.failed)) parts.push(`${name}=${pages}`);
  return `${where.pages} pages of ${where.pageSize} B: ${parts.join(' ') || 'none'}`;
}

/**
 * The placement check of every test here: each page of `region` is on `node`, by move_pages.
 * @throws Error naming how many pages are elsewhere, and where.
 */
function expectOnNode(region: Region, node: number, libnuma?: boolean): Placement {
  const where = placement(region, libnuma === undefined ? {} : { libnuma });
  const elsewhere = where.pages - (where.byNode[node] ?? 0);
  if (where.method !== 'move_pages' || elsewhere > 0) {
    throw new Error(
      `${elsewhere} of ${where.pages} pages are not on node ${node} (${where.method}): ${describePlacement(where)}`,
    );
  }
  return where;
}

describe.skipIf(!runnable)('on every NUMA node', () => {
  for (const { name, libnuma } of BACKENDS) {
    for (const node of memoryNodes) {
      it(`binds 64 MiB to node ${node} with every page there (${name})`, () => {
        const source = numaSource({ node, libnuma });
        try {
          const region = source.acquire(64 * MiB)!;
          expect(memoryPolicy(region, { libnuma })).toEqual({ mode: 'bind', nodes: [node] });
          const where = expectOnNode(region, node, libnuma);
          expect(where.byNode).toEqual({ [node]: where.pages });
          console.log(`bind node ${node}, 64 MiB (${name}): ${describePlacement(where)}`);
        } finally {
          source.close();
        }
      });
    }
  }

  describe("first touch from one node's CPUs", () => {
    const native = numaNative();
    const cpuHome = topo.nodes.find((n) => n.hasMemory && n.cpus.length > 0)!;
    let saved: number[] = [];
    beforeAll(() => {
      saved = native.affinity();
      native.setAffinity(cpuHome.cpus); // run on the home node's CPUs only
    });
    afterAll(() => native.setAffinity(saved));

    // Without a policy, a page lands on the node of the CPU that first writes it. A bound source
    // with prefault off leaves that first write to its user: the policy, not the CPU, must win.
    // (What first touch costs, local against remote, is measured by bench/first-touch.mjs.)
    it(`puts every page on the bound node, local or remote, written from node ${cpuHome.id}'s CPUs`, async () => {
      for (const node of memoryNodes) {
        const source = numaSource({ node, prefault: false });
        try {
          const region = source.acquire(FIRST_TOUCH_BYTES)!;
          // In slices, letting go of the loop between them: an emulated CPU faults pages slowly.
          for (let at = 0; at < region.size; at += FIRST_TOUCH_SLICE) {
            region.bytes.fill(node + 1, at, Math.min(at + FIRST_TOUCH_SLICE, region.size));
            await letGo();
          }
          const where = expectOnNode(region, node);
          expect(where.pages).toBe(FIRST_TOUCH_BYTES / where.pageSize);
          expect(allBytesAre(region.bytes, node + 1)).toBe(true);
          console.log(
            `first touch from node ${cpuHome.id}'s CPUs, bound to node ${node}: ${describePlacement(where)}`,
          );
        } finally {
          source.close();
        }
      }
    });
  });
});

describe.skipIf(!runnable)(`between nodes ${home} and ${other}`, () => {
  const pin = canLock(64 * MiB) ? 'mlock' : false;

  it('catches memory bound to the wrong node', () => {
    // A whole buffer bound to the other node than the one claimed.
    const source = numaSource({ node: home });
    try {
      const region = source.acquire(4 * MiB)!;
      const pages = region.size / numaNative().pageSize;
      expect(() => expectOnNode(region, other)).toThrow(
        `${pages} of ${pages} pages are not on node ${other}`,
      );
      expectOnNode(region, home);
    } finally {
      source.close();
    }

    // One page in the middle of a buffer bound to the other node: caught, and only that page.
    for (const { name, libnuma } of BACKENDS) {
      const native = numaNative({ libnuma });
      const page = native.pageSize;
      const size = 16 * page;
      const address = native.map(size, false)!;
      try {
        native.mbind(address, size, MPOL_BIND, [other]);
        native.mbind(address + 5 * page, page, MPOL_BIND, [home]); // the stray page
        new Uint8Array(native.view(address, size)).fill(1);
        const region = { address, size };
        expect(() => expectOnNode(region, other, libnuma)).toThrow(
          `1 of 16 pages are not on node ${other}`,
        );
        const nodes = Array.from(
          native.movePages(Array.from({ length: 16 }, (_, i) => address + i * page)),
        );
        expect(nodes.flatMap((node, i) => (node === home ? [i] : []))).toEqual([5]);
        console.log(
          `misbound page 5 of 16 (${name}): ${describePlacement(placement(region, { libnuma }))}; pages: ${nodes.join(' ')}`,
        );
      } finally {
        native.unmap(address, size);
      }
    }
  });

  it(`keeps memory on node ${home} there while a process on node ${other} fills its node`, async () => {
    const cpus = topo.node(other)!.cpus;
    const haveTaskset = spawnSync('taskset', ['--version']).status === 0;
    const free = (id: number) => topology().node(id)!.memoryFree; // read now, not cached
    // Everything free on the other node, and a little more, which spills onto this one.
    const fill = free(other) + Math.min(128 * MiB, Math.floor(free(home) / 8));
    if (cpus.length === 0 || !haveTaskset || fill > PRESSURE_LIMIT) {
      console.log(
        `pressure test skipped: node ${other} has ${cpus.length} CPU(s), taskset ${haveTaskset ? 'found' : 'missing'}, ` +
          `${(fill / MiB).toFixed(0)} MiB to fill (ALLOT_NUMA_PRESSURE_LIMIT ${(PRESSURE_LIMIT / MiB).toFixed(0)} MiB)`,
      );
      return;
    }
    const source = numaSource({ node: home, pin });
    let child: ChildProcess | undefined;
    try {
      const region = source.acquire(64 * MiB)!;
      region.bytes.fill(3);
      await letGo();
      expectOnNode(region, home);
      const before = free(other);
      // The default policy allocates on the node of the CPU that faults the page in.
      const script = `
        const keep = [];
        for (let left = ${fill}; left > 0; left -= ${16 * MiB}) {
          keep.push(Buffer.allocUnsafeSlow(Math.min(${16 * MiB}, left)).fill(1));
        }
        process.stdout.write('filled\\n');
        setInterval(() => keep.length, 1000);`;
      child = spawn('taskset', ['-c', cpus.join(','), process.execPath, '-e', script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise<void>((resolve, reject) => {
        child!.stdout!.on('data', (data: Buffer) => {
          if (data.toString().includes('filled')) resolve();
        });
        child!.on('exit', (code, signal) =>
          reject(new Error(`the filling process exited early: ${code ?? signal}`)),
        );
      });
      const during = free(other);
      expect(during).toBeLessThan(before / 4); // the other node really is full
      const where = expectOnNode(region, home);
      await letGo();
      expect(allBytesAre(region.bytes, 3)).toBe(true);
      console.log(
        `under pressure: node ${other} free ${(before / MiB).toFixed(0)} → ${(during / MiB).toFixed(0)} MiB ` +
          `(${(fill / MiB).toFixed(0)} MiB filled from CPUs ${cpus.join(',')}); ` +
          `node ${home} region (pin: ${pin}): ${describePlacement(where)}`,
      );
    } finally {
      if (child !== undefined && child.exitCode === null && child.signalCode === null) {
        // Wait for its memory to go back, so the tests after this one find the node as it was.
        const exited = new Promise((resolve) => child!.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
      source.close();
    }
  });

  for (const { name, libnuma } of BACKENDS) {
    it(`interleaves pages over nodes ${home} and ${other}, one page each in turn (${name})`, () => {
      const native = numaNative({ libnuma });
      const page = native.pageSize;
      const count = 256;
      const size = count * page;
      const address = native.map(size, false)!;
      try {
        native.mbind(address, size, MPOL_INTERLEAVE, [home, other]);
        new Uint8Array(native.view(address, size)).fill(1);
        const region = { address, size };
        expect(memoryPolicy(region, { libnuma })).toEqual({
          mode: 'interleave',
          nodes: [home, other],
        });
        const nodes = Array.from(
          native.movePages(Array.from({ length: count }, (_, i) => address + i * page)),
        );
        const repeated = nodes.flatMap((node, i) => (i > 0 && node === nodes[i - 1] ? [i] : []));
        expect(repeated, `pages on the same node as the page before: ${nodes.join(' ')}`).toEqual(
          [],
        );
        expect(new Set(nodes)).toEqual(new Set([home, other]));
        const where = placement(region, { libnuma });
        expect(where.byNode).toEqual({ [home]: count / 2, [other]: count / 2 });
        console.log(
          `interleave ${home},${other} (${name}): ${describePlacement(where)}; first pages: ${nodes.slice(0, 8).join(' ')}`,
        );
      } finally {
        native.unmap(address, size);
      }
    });
  }

  it('keeps one caching host allocator pool per node', () => {
    const pools = new Map(
      [home, other].map((node) => [node, cachingHostAllocator({ node, pin, config: '' })]),
    );
    try {
      const small = new Map<number, number>();
      for (const [node, pool] of pools) {
        const block = pool.allocate(4096)!;
        const large = pool.allocate(3 * MiB)!;
        small.set(node, block);
        expectOnNode({ address: block, size: 4096 }, node);
        expectOnNode({ address: large, size: 3 * MiB }, node);
        expect(pool.source.regions().length).toBe(2); // a small and a large segment, both here
        for (const region of pool.source.regions()) {
          const where = expectOnNode(region, node);
          console.log(
            `caching pool node ${node}: segment ${region.size / MiB} MiB (pin: ${region.pinned}): ${describePlacement(where)}`,
          );
        }
      }
      // A block freed into one node's pool is served again there, never from another node's.
      const homePool = pools.get(home)!;
      const otherPool = pools.get(other)!;
      homePool.free(small.get(home)!);
      const fromOther = otherPool.allocate(4096)!;
      expect(fromOther).not.toBe(small.get(home));
      expectOnNode({ address: fromOther, size: 4096 }, other);
      expect(homePool.allocate(4096)).toBe(small.get(home));
    } finally {
      for (const pool of pools.values()) {
        pool.reset();
        pool.source.close();
      }
    }
  });

  it('refuses a node that does not exist with the typed error', () => {
    const missing = Math.max(...topo.nodes.map((n) => n.id)) + 1;
    for (const make of [
      () => numaSource({ node: missing }),
      () => cachingHostAllocator({ node: missing }),
      () => numaSource({ node: -1 }),
    ]) {
      let caught: unknown;
      try {
        make();
      } catch (error) {
        caught = error;
      }
      expect(InvalidArgumentError.isInstance(caught)).toBe(true);
      expect((caught as InvalidArgumentError).code).toBe(InvalidArgumentError.code);
      expect((caught as Error).message).toContain(
        `a NUMA node with memory on this machine: ${memoryNodes.join(', ')}`,
      );
    }
    // Why the check comes first: the kernel's own answer for that node is a bare EINVAL.
    for (const { libnuma } of BACKENDS) {
      const native = numaNative({ libnuma });
      const address = native.map(native.pageSize, false)!;
      try {
        let caught: unknown;
        try {
          native.mbind(address, native.pageSize, MPOL_BIND, [missing]);
        } catch (error) {
          caught = error;
        }
        expect(NativeCallError.isInstance(caught)).toBe(true);
        expect((caught as NativeCallError).errnoName).toBe('EINVAL');
      } finally {
        native.unmap(address, native.pageSize);
      }
    }
  });
});

/**
 * `ALLOT_NUMA_VM_PCI=1b36:0005@1`: vm/run.sh placed a PCI device with that vendor:device id behind
 * an expander bridge on node 1. Unset elsewhere, where no device's node is known in advance.
 */
const placedDevice = /^([0-9a-f]{4}):([0-9a-f]{4})@(\d+)$/i.exec(
  process.env.ALLOT_NUMA_VM_PCI ?? '',
);

describe.skipIf(!runnable || placedDevice === null)('GPU → NUMA node, from the PCI bus id', () => {
  const [, vendor, device, node] = placedDevice ?? [];
  const devices = '/sys/bus/pci/devices';
  const read = (busId: string, file: string) =>
    readFileSync(join(devices, busId, file), 'utf8').trim();

  it(`finds node ${node} for the device the VM placed there`, async () => {
    const found = readdirSync(devices).filter(
      (busId) => read(busId, 'vendor') === `0x${vendor}` && read(busId, 'device') === `0x${device}`,
    );
    expect(found).toHaveLength(1);
    const busId = found[0]!; // 0000:11:01.0
    const asNvidiaSmi = `0000${busId}`.toUpperCase(); // 00000000:11:01.0, as nvidia-smi writes it
    expect(nodeOfPciDevice(busId)).toBe(Number(node));
    expect(nodeOfPciDevice(asNvidiaSmi)).toBe(Number(node));
    const cuda = { hostRegister: () => {}, hostUnregister: () => {}, pciBusId: () => asNvidiaSmi };
    expect(await nodeOfCudaDevice(0, { cuda })).toBe(Number(node));
    // The host bridge of the root bus: QEMU gives it no node, and the kernel says -1.
    expect(nodeOfPciDevice('0000:00:00.0')).toBeNull();

    // The staging buffer then lands on the device's node.
    const source = numaSource({ node: nodeOfPciDevice(busId)! });
    try {
      const where = expectOnNode(source.acquire(8 * MiB)!, Number(node));
      console.log(
        `PCI ${asNvidiaSmi} (${vendor}:${device}) → node ${nodeOfPciDevice(asNvidiaSmi)}; staging buffer: ${describePlacement(where)}`,
      );
    } finally {
      source.close();
    }
  });
});
