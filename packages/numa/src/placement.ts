/**
 * Where memory really is: `move_pages(2)` in query mode (no target nodes) reports the node of every
 * page of a range, and `get_mempolicy(2)` with `MPOL_F_ADDR` the policy that governs it. Both work
 * on any memory of this process, so a user can prove a staging buffer sits on the GPU's node.
 */
import { checkSize, InvalidArgumentError, type Region } from '@allot/core';
import { NativeCallError } from './errors';
import {
  MOVE_PAGES_BATCH,
  MPOL_BIND,
  MPOL_DEFAULT,
  MPOL_INTERLEAVE,
  MPOL_LOCAL,
  MPOL_PREFERRED,
  MPOL_PREFERRED_MANY,
} from './ffi/constants';
import { type BackendOptions, type NumaNative, numaNative } from './ffi/native';
import { topology } from './topology';

/** Errno values `move_pages` reports per page, by name (`<asm-generic/errno-base.h>`). */
const PAGE_ERRORS: Readonly<Record<number, string>> = {
  1: 'EPERM',
  12: 'ENOMEM',
  13: 'EACCES',
  14: 'EFAULT',
  16: 'EBUSY',
  22: 'EINVAL',
};
const ENOENT = 2;

/** Pages of a range per node. */
export interface Placement {
  /** Bytes per page queried (the base page size). */
  readonly pageSize: number;
  /** Pages in the range. */
  readonly pages: number;
  /** Node → pages on it; nodes without pages are absent. */
  readonly byNode: Readonly<Record<number, number>>;
  /** Pages not allocated yet (never touched): they have no node. */
  readonly notPresent: number;
  /** Pages the kernel could not report, by errno name (`EFAULT`: not mapped). */
  readonly failed: Readonly<Record<string, number>>;
  /**
   * How it was found: `move_pages`, or `single-node` where the kernel has no NUMA calls (or a
   * seccomp filter forbids them) and the machine has one node: resident pages (`mincore`) are on it.
   */
  readonly method: 'move_pages' | 'single-node';
}

/** Options of {@link placement} and {@link memoryPolicy}. */
export type PlacementOptions = BackendOptions;

function checkRange(region: Region): void {
  if (typeof region !== 'object' || region === null) {
    throw new InvalidArgumentError('region', region, 'a region: { address, size }');
  }
  if (!Number.isSafeInteger(region.address) || region.address <= 0) {
    throw new InvalidArgumentError('region.address', region.address, 'a positive address');
  }
  checkSize(region.size, 'region.size');
}

/**
 * How many pages of `[region.address, region.address + region.size)` are on each node.
 * @throws UnsupportedError off Linux.
 * @throws NativeCallError when the kernel refuses the query (a seccomp filter, say).
 */
export function placement(region: Region, options: PlacementOptions = {}): Placement {
  checkRange(region);
  const native = numaNative(options);
  try {
    return queryPages(native, region);
  } catch (error) {
    const unavailable =
      NativeCallError.isInstance(error) && ['ENOSYS', 'EPERM'].includes(error.errnoName);
    const nodes = topology().memoryNodes();
    if (!unavailable || nodes.length !== 1) throw error;
    return residentPages(native, region, nodes[0]!);
  }
}

function residentPages(native: NumaNative, region: Region, node: number): Placement {
  const pageSize = native.pageSize;
  const first = region.address - (region.address % pageSize);
  const resident = native.residency(first, region.address + region.size - first);
  let present = 0;
  for (const flag of resident) present += flag & 1;
  const byNode = present > 0 ? { [node]: present } : {};
  const pages = resident.length;
  return {
    pageSize,
    pages,
    byNode,
    notPresent: pages - present,
    failed: {},
    method: 'single-node',
  };
}

function queryPages(native: NumaNative, region: Region): Placement {
  const pageSize = native.pageSize;
  const first = region.address - (region.address % pageSize);
  const end = region.address + region.size;
  const pages = Math.ceil((end - first) / pageSize);
  const byNode: Record<number, number> = {};
  const failed: Record<string, number> = {};
  let notPresent = 0;
  for (let start = 0; start < pages; start += MOVE_PAGES_BATCH) {
    const count = Math.min(MOVE_PAGES_BATCH, pages - start);
    const addresses = new Array<number>(count);
    for (let i = 0; i < count; i++) addresses[i] = first + (start + i) * pageSize;
    const status = native.movePages(addresses);
    for (let i = 0; i < count; i++) {
      const value = status[i]!;
      if (value >= 0) byNode[value] = (byNode[value] ?? 0) + 1;
      else if (value === -ENOENT) notPresent++;
      else {
        const name = PAGE_ERRORS[-value] ?? `errno ${-value}`;
        failed[name] = (failed[name] ?? 0) + 1;
      }
    }
  }
  return { pageSize, pages, byNode, notPresent, failed, method: 'move_pages' };
}

/** A memory policy (`set_mempolicy(2)` modes, spelled out). */
export type PolicyMode =
  | 'default'
  | 'preferred'
  | 'bind'
  | 'interleave'
  | 'local'
  | 'preferred-many'
  | 'unknown';

const MODES: Readonly<Record<number, PolicyMode>> = {
  [MPOL_DEFAULT]: 'default',
  [MPOL_PREFERRED]: 'preferred',
  [MPOL_BIND]: 'bind',
  [MPOL_INTERLEAVE]: 'interleave',
  [MPOL_LOCAL]: 'local',
  [MPOL_PREFERRED_MANY]: 'preferred-many',
};

/** The policy that governs a range, and its nodes. */
export interface MemoryPolicy {
  readonly mode: PolicyMode;
  readonly nodes: readonly number[];
}

/**
 * The memory policy at `region.address` (`get_mempolicy` with `MPOL_F_ADDR`).
 * @throws UnsupportedError off Linux.
 */
export function memoryPolicy(region: Region, options: PlacementOptions = {}): MemoryPolicy {
  checkRange(region);
  const raw = numaNative(options).getMempolicy(region.address);
  // Mode flags (MPOL_F_STATIC_NODES, ...) sit in the high bits.
  const mode = raw.mode & 0xff;
  return { mode: MODES[mode] ?? 'unknown', nodes: raw.nodes };
}
