/**
 * NUMA topology from sysfs (`/sys/devices/system/node/`): the nodes, their CPUs, their memory (total
 * and free, from each node's `meminfo`), and the distance matrix (10 = local; the ACPI SLIT scale).
 *
 * Reading never throws for want of NUMA: a kernel without it, a machine without the sysfs tree, or
 * a platform other than Linux reads as one node 0 holding every CPU and all memory (`numa: false`).
 * Everything is read when asked, so free memory is current; nothing is cached.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cpus, freemem, totalmem } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '@allot/core';
import { parseCpuList } from './cpu-list';

/** Where to read sysfs from; tests point it at a fake tree. */
export interface TopologyOptions {
  /** Root of sysfs. @defaultValue '/sys' */
  readonly sysfsRoot?: string;
}

export interface NumaNode {
  /** Node number, as the kernel counts (`nodeN`); numbers can have gaps. */
  readonly id: number;
  /** CPUs of the node, ascending. Empty for memory-only nodes. */
  readonly cpus: readonly number[];
  /** Bytes of memory on the node (`MemTotal`). */
  readonly memoryTotal: number;
  /** Bytes free on the node now (`MemFree`; page cache that could be reclaimed is not counted). */
  readonly memoryFree: number;
  /** Whether the node has memory to bind to (CPU-only nodes do not). */
  readonly hasMemory: boolean;
}

export interface Topology {
  /** True when read from the kernel's NUMA tree; false for the single node assumed without it. */
  readonly numa: boolean;
  /** Nodes by ascending id. */
  readonly nodes: readonly NumaNode[];
  /** `distances[i][j]`: distance from `nodes[i]` to `nodes[j]` (10 local, larger farther). */
  readonly distances: readonly (readonly number[])[];
  /** The node with this id, or undefined. */
  node(id: number): NumaNode | undefined;
  /**
   * Distance between two nodes by id.
   * @throws InvalidArgumentError when either node does not exist.
   */
  distance(from: number, to: number): number;
  /** Node of a CPU, or undefined when no node lists it. */
  nodeOfCpu(cpu: number): number | undefined;
  /** Ids of the nodes that have memory, ascending. */
  memoryNodes(): number[];
}

const DEFAULT_SYSFS = '/sys';
const LOCAL_DISTANCE = 10;

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** `Node 0 MemTotal:  12019924 kB` → bytes per field. */
function parseMeminfo(text: string): Map<string, number> {
  const fields = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^(?:Node \d+ )?([\w()]+):\s+(\d+)(?:\s+kB)?/.exec(line.trim());
    if (match) fields.set(match[1]!, Number(match[2]) * (line.includes('kB') ? 1024 : 1));
  }
  return fields;
}

function describe(nodes: readonly NumaNode[], numa: boolean, matrix: number[][]): Topology {
  const index = new Map(nodes.map((node, i) => [node.id, i]));
  const byCpu = new Map<number, number>();
  for (const node of nodes) for (const cpu of node.cpus) byCpu.set(cpu, node.id);
  const position = (id: number, argument: string): number => {
    const i = index.get(id);
    if (i === undefined) {
      throw new InvalidArgumentError(
        argument,
        id,
        `a NUMA node of this machine (${nodes.map((n) => n.id).join(', ')})`,
      );
    }
    return i;
  };
  return {
    numa,
    nodes,
    distances: matrix,
    node: (id) => {
      const i = index.get(id);
      return i === undefined ? undefined : nodes[i];
    },
    distance: (from, to) => matrix[position(from, 'from')]![position(to, 'to')]!,
    nodeOfCpu: (cpu) => byCpu.get(cpu),
    memoryNodes: () => nodes.filter((n) => n.hasMemory).map((n) => n.id),
  };
}

function singleNode(): Topology {
  const node: NumaNode = {
    id: 0,
    cpus: cpus().map((_, i) => i),
    memoryTotal: totalmem(),
    memoryFree: freemem(),
    hasMemory: true,
  };
  return describe([node], false, [[LOCAL_DISTANCE]]);
}

/**
 * Reads the NUMA topology now. Never throws for want of NUMA (see the file comment).
 */
export function topology(options: TopologyOptions = {}): Topology {
  const root = options.sysfsRoot ?? DEFAULT_SYSFS;
  if (options.sysfsRoot === undefined && process.platform !== 'linux') return singleNode();
  const base = join(root, 'devices', 'system', 'node');
  if (!existsSync(base)) return singleNode();

  const online = readText(join(base, 'online'));
  let ids: number[];
  if (online !== undefined) ids = parseCpuList(online);
  else {
    ids = readdirSync(base)
      .map((name) => /^node(\d+)$/.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
  }
  if (ids.length === 0) return singleNode();
  const withMemoryText = readText(join(base, 'has_memory'));
  const withMemory =
    withMemoryText === undefined ? undefined : new Set(parseCpuList(withMemoryText));

  const nodes: NumaNode[] = [];
  const matrix: number[][] = [];
  for (const id of ids) {
    const dir = join(base, `node${id}`);
    const meminfo = parseMeminfo(readText(join(dir, 'meminfo')) ?? '');
    const memoryTotal = meminfo.get('MemTotal') ?? 0;
    nodes.push({
      id,
      cpus: parseCpuList(readText(join(dir, 'cpulist')) ?? ''),
      memoryTotal,
      memoryFree: meminfo.get('MemFree') ?? 0,
      hasMemory: withMemory === undefined ? memoryTotal > 0 : withMemory.has(id),
    });
    // One distance per online node, in id order; missing figures read as local/remote defaults.
    const row = (readText(join(dir, 'distance')) ?? '').trim().split(/\s+/).filter(Boolean);
    matrix.push(
      ids.map((other, j) => {
        const value = Number(row[j]);
        if (Number.isFinite(value) && value > 0) return value;
        return other === id ? LOCAL_DISTANCE : 2 * LOCAL_DISTANCE;
      }),
    );
  }
  return describe(nodes, true, matrix);
}

/** Node of `cpu`, or undefined when no node lists it. */
export function nodeOfCpu(cpu: number, options: TopologyOptions = {}): number | undefined {
  return topology(options).nodeOfCpu(cpu);
}

const BUS_ID = /^(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$/i;

/**
 * A PCI bus id in sysfs form: `00000000:3B:00.0` (as `nvidia-smi` and CUDA write it) and `3b:00.0`
 * both become `0000:3b:00.0`.
 * @throws InvalidArgumentError when `busId` is not a PCI bus id.
 */
export function normalizePciBusId(busId: string): string {
  const match = typeof busId === 'string' ? BUS_ID.exec(busId.trim()) : null;
  if (match === null) {
    throw new InvalidArgumentError(
      'busId',
      busId,
      'a PCI bus id such as "0000:3b:00.0" (domain:bus:device.function)',
    );
  }
  const domain = (match[1] ?? '0').toLowerCase().padStart(8, '0').slice(-4);
  const bus = match[2]!.toLowerCase().padStart(2, '0');
  const device = match[3]!.toLowerCase().padStart(2, '0');
  return `${domain}:${bus}:${device}.${match[4]}`;
}

/**
 * NUMA node of a PCI device (a GPU, a NIC) from `/sys/bus/pci/devices/<id>/numa_node`; null when
 * the firmware does not say (`-1`, usual on one-node machines).
 * @throws InvalidArgumentError when `busId` is malformed or no such device exists.
 */
export function nodeOfPciDevice(busId: string, options: TopologyOptions = {}): number | null {
  const id = normalizePciBusId(busId);
  const root = options.sysfsRoot ?? DEFAULT_SYSFS;
  const dir = join(root, 'bus', 'pci', 'devices', id);
  const text = readText(join(dir, 'numa_node'));
  if (text === undefined) {
    if (existsSync(dir)) return null;
    throw new InvalidArgumentError('busId', busId, `a PCI device present here (no ${dir})`);
  }
  const node = Number(text.trim());
  return Number.isInteger(node) && node >= 0 ? node : null;
}
