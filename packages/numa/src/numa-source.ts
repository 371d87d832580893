/**
 * numaSource: a memory source whose regions are host memory bound to one NUMA node.
 *
 * ```
 *  acquire(size)
 *    │ round up to the page size (or the huge page size)
 *    ▼
 *  mmap(anonymous)  ── huge pages: MAP_HUGETLB, else transparent (aligned, MADV_HUGEPAGE) ──┐
 *    ▼                                                                                      │
 *  mbind(MPOL_BIND | MPOL_PREFERRED, node)   libnuma's wrapper, or syscall(2) without it  ◄─┘
 *    ▼
 *  prefault: write one byte per page, so every page is allocated now, under the policy
 *    ▼
 *  pin: mlock, or cudaHostRegister (through CudaHooks), or nothing
 *    ▼
 *  region { address, size, node, bytes, buffer }   release: unpin, munmap
 * ```
 *
 * The node is checked against the topology before anything is mapped: libnuma and the kernel
 * quietly fall back to another node in places, so a wrong node is an `InvalidArgumentError` that
 * lists the nodes there are. Addresses are real pointers (numbers). Views are made once per region
 * (`koffi.view` over the mapping) and shared; after `release` the memory is unmapped, and touching
 * a view of it is a use after free (the process may crash), as with any pointer.
 *
 * This file checks the options and keeps the books (live regions, reserved and locked bytes); the
 * system calls of each step are in `node-pages.ts` (`NodePages`), and the address-ordered list of
 * live regions in `region-list.ts`.
 */
import { readFileSync } from 'node:fs';
import {
  alignUp,
  checkNonNegativeInteger,
  checkSize,
  formatBytes,
  type HostRegion,
  InvalidArgumentError,
  type MemorySource,
  UnsupportedError,
} from '@allot/core';
import type { CudaHooks } from './cuda-hooks';
import type { Env } from './ffi/libraries';
import { type NumaBackend, type NumaNative, numaNative } from './ffi/native';
import { type HugePageKind, NodePages, type NumaPolicy, type PinMode } from './node-pages';
import { RegionList } from './region-list';
import { topology as readTopology, type Topology } from './topology';

export type { HugePageKind, NumaPolicy, PinMode };

/** Options of {@link numaSource}. */
export interface NumaSourceOptions {
  /** NUMA node the memory lives on (see `topology().memoryNodes()`). */
  readonly node: number;
  /**
   * `bind`: pages come only from `node` (`MPOL_BIND`; when it is full, the kernel reclaims or the
   * OOM killer acts). `preferred`: from `node` while it has free pages, else elsewhere
   * (`MPOL_PREFERRED`). @defaultValue 'bind'
   */
  readonly policy?: NumaPolicy;
  /**
   * `true`: pages from the hugetlbfs pool (`MAP_HUGETLB`, reserved with `vm.nr_hugepages`), falling
   * back to transparent huge pages when none are free. `'transparent'`: transparent huge pages only
   * (`MADV_HUGEPAGE`, 2 MiB-aligned regions). `false`: base pages. Regions are then multiples of
   * the huge page size. @defaultValue false
   */
  readonly hugePages?: boolean | 'transparent';
  /**
   * Write one byte per page at `acquire`, so every page is allocated at once on the node (and a
   * region costs no page faults later). Without it, pages land on first touch, wherever the policy
   * allows then. @defaultValue true
   */
  readonly prefault?: boolean;
  /**
   * `mlock`: page-lock with `mlock(2)` (subject to `RLIMIT_MEMLOCK` without `CAP_IPC_LOCK`).
   * `cuda`: page-lock and register with CUDA (`cudaHostRegister`), for asynchronous copies; needs
   * `cuda`. `false`: pageable memory. @defaultValue false
   */
  readonly pin?: PinMode;
  /** CUDA hooks for `pin: 'cuda'` (from `await loadCudaHooks()`). */
  readonly cuda?: CudaHooks | null;
  /** Most bytes live at once; `acquire` returns null past it. @defaultValue Infinity */
  readonly limit?: number;
  /** Use libnuma when installed, else raw system calls. @defaultValue true unless ALLOT_NUMA_NO_LIBNUMA=1 */
  readonly libnuma?: boolean;
  /** Environment to read overrides from, at creation. @defaultValue process.env */
  readonly env?: Env;
  /** Topology to check `node` against. @defaultValue topology() */
  readonly topology?: Topology;
}

/** A region of host memory on a NUMA node. */
export interface NumaRegion extends HostRegion {
  /** Node the region is bound to. */
  readonly node: number;
  /** The policy in force; `default` when the kernel has no NUMA calls and there is one node. */
  readonly policy: NumaPolicy | 'default';
  readonly hugePages: HugePageKind;
  readonly pinned: PinMode;
  /** The whole region as bytes (the same object every time). */
  readonly bytes: Uint8Array;
  /** An ArrayBuffer over the region's memory, for typed arrays of any kind. */
  readonly buffer: ArrayBuffer;
}

export interface NumaSource extends MemorySource<NumaRegion> {
  readonly kind: 'numa';
  readonly node: number;
  readonly policy: NumaPolicy;
  readonly pin: PinMode;
  /** Which library serves the NUMA calls. */
  readonly backend: NumaBackend;
  /** Why libnuma is not in use, when it is not (paths searched, or how it was skipped). */
  readonly libnumaNotes: readonly string[];
  view(address: number, size: number): Uint8Array;
  /** Live regions in address order. */
  regions(): readonly NumaRegion[];
  /** Bytes this source holds page-locked now. */
  lockedBytes(): number;
  /** Releases every live region. */
  close(): void;
}

/** Huge page size when `/proc/meminfo` does not say. */
const DEFAULT_HUGE_PAGE = 2 * 1024 * 1024;

function hugePageSize(): number {
  try {
    const match = /^Hugepagesize:\s+(\d+)\s+kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    return match ? Number(match[1]) * 1024 : DEFAULT_HUGE_PAGE;
  } catch {
    return DEFAULT_HUGE_PAGE;
  }
}

function checkOptions(options: NumaSourceOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', options, 'an object with at least `node`');
  }
  const { policy, hugePages, pin, limit } = options;
  if (policy !== undefined && policy !== 'bind' && policy !== 'preferred') {
    throw new InvalidArgumentError('policy', policy, "'bind' or 'preferred'");
  }
  if (hugePages !== undefined && typeof hugePages !== 'boolean' && hugePages !== 'transparent') {
    throw new InvalidArgumentError('hugePages', hugePages, "true, false or 'transparent'");
  }
  if (pin !== undefined && pin !== false && pin !== 'mlock' && pin !== 'cuda') {
    throw new InvalidArgumentError('pin', pin, "'mlock', 'cuda' or false");
  }
  if (pin === 'cuda' && (options.cuda === undefined || options.cuda === null)) {
    throw new InvalidArgumentError(
      'cuda',
      options.cuda ?? null,
      "CUDA hooks with pin: 'cuda': pass `cuda: await loadCudaHooks()` (null means @allot/cuda " +
        "is not installed or has no host registration; use pin: 'mlock' then)",
    );
  }
  if (limit !== undefined && limit !== Number.POSITIVE_INFINITY) {
    checkNonNegativeInteger(limit, 'limit');
  }
}

/** Checks `node` against the topology before any call that could silently fall back. */
function checkNode(node: number, topo: Topology): void {
  const memoryNodes = topo.memoryNodes();
  if (!Number.isSafeInteger(node) || !memoryNodes.includes(node)) {
    const cpuOnly = topo.nodes.filter((n) => !n.hasMemory).map((n) => n.id);
    throw new InvalidArgumentError(
      'node',
      node,
      `a NUMA node with memory on this machine: ${memoryNodes.join(', ')}` +
        (cpuOnly.length > 0 ? ` (nodes without memory: ${cpuOnly.join(', ')})` : '') +
        (topo.numa ? '' : ' (no NUMA topology here: one node, 0)'),
    );
  }
}

/**
 * Makes a {@link NumaSource}. Checks the options and the node now; loads the native libraries now.
 * @throws InvalidArgumentError for a node that does not exist (or has no memory), or bad options.
 * @throws UnsupportedError off Linux, or when libc cannot be loaded.
 */
export function numaSource(options: NumaSourceOptions): NumaSource {
  checkOptions(options);
  if (process.platform !== 'linux') {
    throw new UnsupportedError(
      `numaSource binds memory to NUMA nodes on Linux only; this is ${process.platform}. ` +
        "Use hostSource from '@allot/core' for plain host memory.",
    );
  }
  const node = options.node;
  const topo = options.topology ?? readTopology();
  checkNode(node, topo);
  const policy = options.policy ?? 'bind';
  const pin = options.pin ?? false;
  const prefault = options.prefault ?? true;
  const hugePages = options.hugePages ?? false;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const cuda = options.cuda ?? null;
  const native: NumaNative = numaNative({
    ...(options.libnuma === undefined ? {} : { libnuma: options.libnuma }),
    ...(options.env === undefined ? {} : { env: options.env }),
  });
  const hugeSize = hugePages === false ? 0 : hugePageSize();
  const granularity = hugePages === false ? native.pageSize : hugeSize;
  const singleNode = topo.memoryNodes().length === 1;

  const pages = new NodePages({
    native,
    node,
    policy,
    hugePages,
    hugeSize,
    pin,
    cuda,
    singleNode,
  });
  const live = new RegionList<NumaRegion>();
  let reserved = 0;
  let locked = 0;

  const source: NumaSource = {
    kind: 'numa',
    granularity,
    hostAccessible: true,
    node,
    policy,
    pin,
    backend: native.backend,
    libnumaNotes: native.libnumaNotes,
    acquire(size: number): NumaRegion | null {
      checkSize(size);
      const rounded = alignUp(size, granularity);
      if (rounded > limit - reserved) return null;
      const mapping = pages.map(rounded);
      if (mapping === null) return null;
      const { address, kind } = mapping;
      let pinned: PinMode = false;
      try {
        const bound = pages.bind(address, rounded);
        const buffer = native.view(address, rounded);
        const bytes = new Uint8Array(buffer);
        if (prefault) {
          const step = kind === 'explicit' ? hugeSize : native.pageSize;
          for (let offset = 0; offset < rounded; offset += step) bytes[offset] = 0;
        }
        if (pin !== false) {
          if (!pages.lock(address, rounded, locked)) {
            native.unmap(address, rounded);
            return null;
          }
          pinned = pin;
        }
        const region: NumaRegion = {
          address,
          size: rounded,
          node,
          policy: bound ? policy : 'default',
          hugePages: kind,
          pinned,
          bytes,
          buffer,
        };
        live.insert(region);
        reserved += rounded;
        if (pinned !== false) locked += rounded;
        return region;
      } catch (error) {
        native.unmap(address, rounded);
        throw error;
      }
    },
    release(region: NumaRegion): void {
      const index =
        region === null || typeof region !== 'object' ? -1 : live.indexOf(region.address);
      const r = live.at(index);
      if (r === undefined || r !== region) {
        throw new InvalidArgumentError(
          'region',
          region?.address === undefined ? region : `0x${region.address.toString(16)}`,
          'a live region of this NUMA source',
        );
      }
      live.removeAt(index);
      reserved -= r.size;
      try {
        pages.unlock(r);
      } finally {
        if (r.pinned !== false) locked -= r.size;
        native.unmap(r.address, r.size);
      }
    },
    view(address: number, size: number): Uint8Array {
      const r = live.at(live.indexOf(address));
      if (r === undefined) {
        throw new InvalidArgumentError(
          'address',
          typeof address === 'number' ? `0x${address.toString(16)}` : address,
          `an address inside a live region of this NUMA source (${live.length} live)`,
        );
      }
      const offset = address - r.address;
      if (!Number.isSafeInteger(size) || size < 0 || offset + size > r.size) {
        throw new InvalidArgumentError(
          'size',
          size,
          `a range that ends inside its region (${formatBytes(r.size - offset)} remain after ` +
            `0x${address.toString(16)})`,
        );
      }
      return r.bytes.subarray(offset, offset + size);
    },
    regions: () => live.toArray(),
    reservedBytes: () => reserved,
    lockedBytes: () => locked,
    close(): void {
      const errors: unknown[] = [];
      for (const region of live.toArray().reverse()) {
        try {
          source.release(region);
        } catch (error) {
          errors.push(error);
        }
      }
      if (errors.length > 0) throw errors[0];
    },
  };
  return source;
}
