/**
 * The allocator rows of the benchmark: a table from a row name to a factory
 * `(capacity, profile) => allocator`.
 *
 * The allot rows are the strategies of `@allot/lab/strategies`, the one table the lab's rows come
 * from too (recipes and constants); adding an allot row is adding a strategy there. The caching
 * pool (the row whose pairs are cache hits) and the peers are listed here. Every row is built with alignment 8 (where it takes one) and base 0, so capacities and
 * high-water marks compare across rows.
 *
 * The peers' packages are imported when their row loads, by a specifier held in a variable: a peer
 * that is not installed or fails to load is skipped with a message saying which, and the rest of the
 * run goes on.
 */
import { cachingPool } from '@allot/caching';
import { STRATEGIES, type Strategy } from '@allot/lab/strategies';
import { addressSource } from '@allot/workloads';
import { AS_TLSF_MAX_CAPACITY, asTlsf, compileAsTlsf } from './as-tlsf';
import type { BenchAllocator } from './bench-allocator';
import { bump } from './bump';
import { bumpTable } from './bump-table';
import { THING_MAX_CAPACITY, thingMalloc } from './thing-malloc';

export type { BenchAllocator } from './bench-allocator';

/** What a factory may know about the workload it will run (to size or split its memory). */
export interface WorkloadProfile {
  readonly peakLiveBytes: number;
  readonly totalAllocatedBytes: number;
  readonly allocs: number;
  readonly maxSize: number;
}

export type AllocatorFactory = (capacity: number, profile: WorkloadProfile) => BenchAllocator;

/** One row of the benchmark. */
export interface AllocatorEntry {
  readonly name: string;
  /** How the row is built, shown in BENCHMARKS.md. */
  readonly recipe: string;
  /** A peer (not an allot strategy): the ratios are taken against these. */
  readonly peer?: boolean;
  /** Why the row does not run `profile`, or `null` when it does. */
  readonly skips?: (profile: WorkloadProfile) => string | null;
  /** Largest capacity the row can manage. @defaultValue 2^48 */
  readonly maxCapacity?: number;
  /** Capacity for the timing runs. @defaultValue {@link defaultTimingCapacity} */
  readonly timingCapacity?: (profile: WorkloadProfile) => number;
  /**
   * Capacity in the raw workloads, for a row that does not manage the workload's arena (the floors,
   * which never reuse memory, and the pool, which grows from its source). @defaultValue the arena
   */
  readonly rawCapacity?: (profile: WorkloadProfile) => number;
  /** Imports the packages and returns the factory; throws {@link RowUnavailableError} when it cannot. */
  readonly load: () => Promise<AllocatorFactory>;
}

/** A peer's package is missing or does not export what the row needs. */
export class RowUnavailableError extends Error {}

/** Largest capacity of a row without its own limit; the caching row's source takes it as none. */
const MAX_CAPACITY = 2 ** 48;

type Module = Record<string, unknown>;

/** Imports a peer's `specifier` or throws {@link RowUnavailableError} explaining why it is unavailable. */
export async function importPackage(specifier: string): Promise<Module> {
  try {
    const name: string = specifier;
    return (await import(name)) as Module;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new RowUnavailableError(`${specifier} is not installed: run \`pnpm install\``);
    }
    throw new RowUnavailableError(`${specifier} failed to load: ${(error as Error).message}`);
  }
}

/**
 * 2.5 × peak live bytes rounded up to a power of two (2.5–5 × peak), at least 1 MiB: room for every
 * strategy measured so far without making setup costs that grow with capacity dominate.
 */
export function defaultTimingCapacity(profile: WorkloadProfile): number {
  const wanted = Math.max(2 ** 20, 2.5 * profile.peakLiveBytes);
  return 2 ** Math.ceil(Math.log2(wanted));
}

/** Capacity of the bump floors, which never reuse memory: every request, aligned, and 1 MiB more. */
function floorCapacity(profile: WorkloadProfile): number {
  return profile.totalAllocatedBytes + 8 * profile.allocs + 2 ** 20;
}

/** Skips the workloads with a request above `maxRequest` (the largest a row serves). */
const requestsUpTo =
  (maxRequest: number) =>
  (profile: WorkloadProfile): string | null =>
    profile.maxSize > maxRequest
      ? `requests up to ${profile.maxSize} B exceed the row's ${maxRequest} B`
      : null;

/**
 * An allot strategy's row: name and recipe from the shared table; a strategy with headroom (slab's
 * one slab per class) gets it on top of the default timing capacity, so small traces do not time
 * failed allocations.
 */
function strategyRow(entry: Strategy): AllocatorEntry {
  const { headroom, maxRequest } = entry;
  return {
    name: entry.name,
    recipe: `${entry.recipe} (${entry.summary})`,
    ...(maxRequest === undefined ? {} : { skips: requestsUpTo(maxRequest) }),
    ...(headroom === undefined
      ? {}
      : {
          timingCapacity: (profile: WorkloadProfile) =>
            2 ** Math.ceil(Math.log2(defaultTimingCapacity(profile) + headroom)),
        }),
    load: async () => (capacity) => entry.build(capacity),
  };
}

/** Every row, in the order of the tables. */
export const ALLOCATORS: readonly AllocatorEntry[] = [
  ...STRATEGIES.map(strategyRow),
  {
    name: 'caching',
    recipe:
      "cachingPool({ source: addressSource({ limit: capacity }) }): PyTorch's defaults over an " +
      'address-only source (no bytes behind it); a same-size pair is a cache hit',
    // Segments are 2 MiB at least and cost nothing here: time it without a limit.
    timingCapacity: () => MAX_CAPACITY,
    rawCapacity: () => MAX_CAPACITY,
    load: async () => (capacity) =>
      cachingPool({
        source: addressSource(capacity >= MAX_CAPACITY ? {} : { limit: capacity }),
        config: '',
      }),
  },
  {
    name: 'as-tlsf',
    recipe:
      "AssemblyScript's runtime TLSF (`heap.alloc`/`heap.free`, `--runtime minimal -O3`), compiled " +
      'to wasm when the bench starts; a non-growing memory of the capacity holds its headers',
    peer: true,
    maxCapacity: AS_TLSF_MAX_CAPACITY,
    load: async () => {
      const asc = (await importPackage('assemblyscript/asc')).default;
      if (asc === null || typeof asc !== 'object') {
        throw new RowUnavailableError('assemblyscript/asc does not export the compiler');
      }
      return asTlsf(await compileAsTlsf(asc as Parameters<typeof compileAsTlsf>[0]));
    },
  },
  {
    name: 'thi.ng-malloc',
    recipe: '@thi.ng/malloc MemPool({ size: capacity, align: 8 }); capacity includes its headers',
    peer: true,
    maxCapacity: THING_MAX_CAPACITY,
    load: async () => {
      const module = await importPackage('@thi.ng/malloc');
      const MemPool = module.MemPool;
      if (typeof MemPool !== 'function') {
        throw new RowUnavailableError('@thi.ng/malloc does not export MemPool');
      }
      return thingMalloc(MemPool as Parameters<typeof thingMalloc>[0]);
    },
  },
  {
    name: 'bump',
    recipe: 'bump allocator (free is a no-op): the floor',
    peer: true,
    timingCapacity: floorCapacity,
    rawCapacity: floorCapacity,
    load: async () => (capacity) => bump(capacity),
  },
  {
    name: 'bump+table',
    recipe:
      'bump allocator whose free finds the block in an address table (`AddressMap` of ' +
      '`@allot/blocks`): the floor of an allocator that keeps its records outside the memory',
    peer: true,
    timingCapacity: floorCapacity,
    rawCapacity: floorCapacity,
    load: async () => (capacity) => bumpTable(capacity),
  },
];

/** Largest capacity a row can manage. */
export function maxCapacityOf(entry: AllocatorEntry): number {
  return entry.maxCapacity ?? MAX_CAPACITY;
}

/** The row named `name`, or undefined. */
export function findAllocator(name: string): AllocatorEntry | undefined {
  return ALLOCATORS.find((entry) => entry.name === name);
}
