import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '@allot/core';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeOfCudaDevice } from './cuda-hooks';
import { nodeOfCpu, nodeOfPciDevice, normalizePciBusId, topology } from './topology';

describe('topology of this machine', () => {
  it('reads the nodes, CPUs, memory and distances', () => {
    const topo = topology();
    expect(topo.nodes.length).toBeGreaterThanOrEqual(1);
    const node0 = topo.node(0)!;
    expect(node0.hasMemory).toBe(true);
    expect(node0.memoryTotal).toBeGreaterThan(0);
    expect(node0.memoryFree).toBeGreaterThan(0);
    expect(node0.memoryFree).toBeLessThanOrEqual(node0.memoryTotal);
    const allCpus = topo.nodes.flatMap((n) => n.cpus).sort((a, b) => a - b);
    expect(allCpus.length).toBeGreaterThanOrEqual(1);
    expect(new Set(allCpus).size).toBe(allCpus.length);
    expect(topo.distance(0, 0)).toBe(10);
    expect(topo.distances.length).toBe(topo.nodes.length);
    expect(nodeOfCpu(allCpus[0]!)).toBeDefined();
    expect(topo.nodeOfCpu(100_000)).toBeUndefined();
    expect(() => topo.distance(0, 4242)).toThrow(InvalidArgumentError);
    console.log(
      `topology: ${topo.numa ? 'NUMA' : 'no NUMA tree'}; ` +
        topo.nodes
          .map(
            (n) =>
              `node ${n.id}: ${n.cpus.length} CPUs, ${(n.memoryTotal / 2 ** 30).toFixed(1)} GiB`,
          )
          .join('; '),
    );
  });
});

describe('topology from a fake sysfs tree', () => {
  const root = mkdtempSync(join(tmpdir(), 'allot-numa-sysfs-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  const nodes = 'devices/system/node';
  write(`${nodes}/online`, '0-1,3\n');
  write(`${nodes}/has_memory`, '0-1\n');
  write(`${nodes}/node0/cpulist`, '0-3,8-11\n');
  write(`${nodes}/node0/distance`, '10 21 31\n');
  write(
    `${nodes}/node0/meminfo`,
    'Node 0 MemTotal:       16384000 kB\nNode 0 MemFree:         8192000 kB\nNode 0 MemUsed: 1 kB\n',
  );
  write(`${nodes}/node1/cpulist`, '4-7,12-15\n');
  write(`${nodes}/node1/distance`, '21 10 31\n');
  write(
    `${nodes}/node1/meminfo`,
    'Node 1 MemTotal:       16384000 kB\nNode 1 MemFree:         1024 kB\n',
  );
  write(`${nodes}/node3/cpulist`, '16\n'); // a CPU-only node
  write(`${nodes}/node3/distance`, '31 31 10\n');
  write(`${nodes}/node3/meminfo`, 'Node 3 MemTotal: 0 kB\nNode 3 MemFree: 0 kB\n');
  write('bus/pci/devices/0000:3b:00.0/numa_node', '1\n');
  write('bus/pci/devices/0000:00:02.0/numa_node', '-1\n');
  const topo = topology({ sysfsRoot: root });

  it('lists nodes with gaps in their numbers', () => {
    expect(topo.numa).toBe(true);
    expect(topo.nodes.map((n) => n.id)).toEqual([0, 1, 3]);
    expect(topo.memoryNodes()).toEqual([0, 1]);
    expect(topo.node(1)).toEqual({
      id: 1,
      cpus: [4, 5, 6, 7, 12, 13, 14, 15],
      memoryTotal: 16384000 * 1024,
      memoryFree: 1024 * 1024,
      hasMemory: true,
    });
    expect(topo.node(3)!.hasMemory).toBe(false);
    expect(topo.node(2)).toBeUndefined();
  });

  it('reads the distance matrix by node id', () => {
    expect(topo.distances).toEqual([
      [10, 21, 31],
      [21, 10, 31],
      [31, 31, 10],
    ]);
    expect(topo.distance(0, 1)).toBe(21);
    expect(topo.distance(3, 0)).toBe(31);
  });

  it('finds the node of a CPU', () => {
    expect(topo.nodeOfCpu(9)).toBe(0);
    expect(topo.nodeOfCpu(13)).toBe(1);
    expect(topo.nodeOfCpu(16)).toBe(3);
    expect(nodeOfCpu(5, { sysfsRoot: root })).toBe(1);
  });

  it('finds the node of a GPU from its PCI bus id, in any spelling', () => {
    expect(nodeOfPciDevice('0000:3b:00.0', { sysfsRoot: root })).toBe(1);
    expect(nodeOfPciDevice('00000000:3B:00.0', { sysfsRoot: root })).toBe(1);
    expect(nodeOfPciDevice('3b:00.0', { sysfsRoot: root })).toBe(1);
    expect(nodeOfPciDevice('0000:00:02.0', { sysfsRoot: root })).toBeNull();
    expect(() => nodeOfPciDevice('0000:99:00.0', { sysfsRoot: root })).toThrow(
      /a PCI device present here/,
    );
    expect(() => nodeOfPciDevice('gpu0', { sysfsRoot: root })).toThrow(InvalidArgumentError);
  });

  it('finds the node of a CUDA device through hooks', async () => {
    const cuda = {
      hostRegister: () => {},
      hostUnregister: () => {},
      pciBusId: (device: number) => (device === 0 ? '00000000:3B:00.0' : '0000:00:02.0'),
    };
    expect(await nodeOfCudaDevice(0, { cuda, sysfsRoot: root })).toBe(1);
    expect(await nodeOfCudaDevice(1, { cuda, sysfsRoot: root })).toBeNull();
    await expect(nodeOfCudaDevice(0, { cuda: null, sysfsRoot: root })).rejects.toThrow(
      /nodeOfPciDevice/,
    );
    await expect(nodeOfCudaDevice(-1, { cuda })).rejects.toThrow(InvalidArgumentError);
  });

  it('normalizes bus ids', () => {
    expect(normalizePciBusId('00000001:3B:1F.7')).toBe('0001:3b:1f.7');
    expect(normalizePciBusId('b:0.1')).toBe('0000:0b:00.1');
  });
});

describe('topology without NUMA', () => {
  it('reads as one node holding every CPU and all memory', () => {
    const empty = mkdtempSync(join(tmpdir(), 'allot-numa-empty-'));
    try {
      const topo = topology({ sysfsRoot: empty });
      expect(topo.numa).toBe(false);
      expect(topo.memoryNodes()).toEqual([0]);
      expect(topo.node(0)!.cpus.length).toBe(cpus().length);
      expect(topo.distances).toEqual([[10]]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
