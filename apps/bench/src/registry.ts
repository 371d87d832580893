/**
 * The allocator rows of the benchmark: a table from a row name to a factory
 * `(capacity, profile) => allocator`.
 *
 * Strategy packages are imported dynamically, by a specifier held in a variable so that neither
 * TypeScript nor the bundler binds to their current exports: a row whose package is not built yet
 * (no `dist`), fails to load, or does not export its factory yet is skipped with a message saying
 * which, and the rest of the run goes on. Adding a row is adding an entry to {@link ALLOCATORS}.
 *
 * Every row is built with alignment 8 (where the strategy takes one) and base 0, so capacities and
 * high-water marks compare across rows.
 */
import { AS_TLSF_MAX_CAPACITY, asTlsf, compileAsTlsf } from './as-tlsf';
import type { BenchAllocator } from './bench-allocator';
import { bump } from './bump';
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
  /** Imports the packages and returns the factory; throws {@link RowUnavailableError} when it cannot. */
  readonly load: () => Promise<AllocatorFactory>;
}

/** A row's package is missing, unbuilt, or does not export what the row needs yet. */
export class RowUnavailableError extends Error {}

/** The slab row runs the workloads whose requests are all at most this size. */
export const SMALL_THRESHOLD = 64 * 1024;

const MAX_CAPACITY = 2 ** 48;

type Module = Record<string, unknown>;

/** Imports `specifier` or throws {@link RowUnavailableError} explaining why it is unavailable. */
export async function importPackage(specifier: string): Promise<Module> {
  try {
    const name: string = specifier;
    return (await import(name)) as Module;
  } catch (error) {
    const code = (error as { code?: string }).code;
    const folder = specifier.replace('@allot/', 'packages/');
    if (
      !specifier.startsWith('@allot/') &&
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND')
    ) {
      throw new RowUnavailableError(`${specifier} is not installed: run \`pnpm install\``);
    }
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new RowUnavailableError(
        `${specifier} is not built (no ${folder}/dist): run \`pnpm --filter ${specifier}... build\``,
      );
    }
    throw new RowUnavailableError(`${specifier} failed to load: ${(error as Error).message}`);
  }
}

/** `module[name]` as a function, or {@link RowUnavailableError}. */
function exported<F>(module: Module, specifier: string, name: string): F {
  const value = module[name];
  if (typeof value !== 'function') {
    throw new RowUnavailableError(`${specifier} does not export ${name}() yet`);
  }
  return value as F;
}

type Factory = (options: Record<string, unknown>) => BenchAllocator;

async function strategy(specifier: string, name: string): Promise<Factory> {
  return exported<Factory>(await importPackage(specifier), specifier, name);
}

/** The best-fit package's factory for `mode`: its named export when it has one, else `bestFit({ mode })`. */
async function bestFitMode(mode: 'best' | 'good' | 'worst'): Promise<Factory> {
  const module = await importPackage('@allot/best-fit');
  const named = { best: 'bestFit', good: 'goodFit', worst: 'worstFit' }[mode];
  if (typeof module[named] === 'function') return module[named] as Factory;
  const bestFit = exported<Factory>(module, '@allot/best-fit', 'bestFit');
  return (options) => bestFit({ ...options, mode });
}

/**
 * 2.5 × peak live bytes rounded up to a power of two (2.5–5 × peak), at least 1 MiB: room for every
 * strategy measured so far without making setup costs that grow with capacity dominate.
 */
export function defaultTimingCapacity(profile: WorkloadProfile): number {
  const wanted = Math.max(2 ** 20, 2.5 * profile.peakLiveBytes);
  return 2 ** Math.ceil(Math.log2(wanted));
}

/** The hybrid's slab side: requests up to this size become slab objects cut from the range. */
export const HYBRID_THRESHOLD = 256;
/** Bytes of one slab of the hybrid: a page, so a size class never strands more than a page. */
export const HYBRID_SLAB_SIZE = 4096;

const smallOnly = (profile: WorkloadProfile): string | null =>
  profile.maxSize > SMALL_THRESHOLD
    ? `requests up to ${profile.maxSize} B exceed the slab row's ${SMALL_THRESHOLD} B`
    : null;

/** Every row, in the order of the tables. */
export const ALLOCATORS: readonly AllocatorEntry[] = [
  {
    name: 'first-fit',
    recipe: 'firstFit({ capacity, alignment: 8 })',
    load: async () => {
      const firstFit = await strategy('@allot/first-fit', 'firstFit');
      return (capacity) => firstFit({ capacity, alignment: 8 });
    },
  },
  {
    name: 'next-fit',
    recipe: 'firstFit({ capacity, alignment: 8, nextFit: true })',
    load: async () => {
      const firstFit = await strategy('@allot/first-fit', 'firstFit');
      return (capacity) => firstFit({ capacity, alignment: 8, nextFit: true });
    },
  },
  {
    name: 'best-fit',
    recipe: "bestFit({ capacity, alignment: 8 }) (mode 'best')",
    load: async () => {
      const create = await bestFitMode('best');
      return (capacity) => create({ capacity, alignment: 8 });
    },
  },
  {
    name: 'good-fit',
    recipe: "goodFit({ capacity, alignment: 8 }) (bestFit mode 'good', TLSF-style)",
    load: async () => {
      const create = await bestFitMode('good');
      return (capacity) => create({ capacity, alignment: 8 });
    },
  },
  {
    name: 'worst-fit',
    recipe: "worstFit({ capacity, alignment: 8 }) (bestFit mode 'worst')",
    load: async () => {
      const create = await bestFitMode('worst');
      return (capacity) => create({ capacity, alignment: 8 });
    },
  },
  {
    name: 'buddy',
    recipe: 'buddy({ capacity })',
    load: async () => {
      const buddy = await strategy('@allot/buddy', 'buddy');
      return (capacity) => buddy({ capacity });
    },
  },
  {
    name: 'slab',
    recipe: 'slab({ upstream: buddy({ capacity }) }) (default size classes)',
    skips: smallOnly,
    load: async () => {
      const slab = await strategy('@allot/slab', 'slab');
      const buddy = await strategy('@allot/buddy', 'buddy');
      return (capacity) => slab({ upstream: buddy({ capacity }) });
    },
  },
  {
    name: 'hybrid',
    recipe:
      'range = bestFit({ capacity, alignment: 8 }); segregate({ threshold: 256 B, small: ' +
      'slab({ upstream: range, slabSize: 4 KiB }), large: range }): slabs and large blocks share one range',
    load: async () => {
      const segregate = exported<Factory>(
        await importPackage('@allot/core'),
        '@allot/core',
        'segregate',
      );
      const slab = await strategy('@allot/slab', 'slab');
      const bestFit = await bestFitMode('best');
      return (capacity) => {
        const range = bestFit({ capacity, alignment: 8 });
        return segregate({
          threshold: HYBRID_THRESHOLD,
          small: slab({ upstream: range, slabSize: HYBRID_SLAB_SIZE }),
          large: range,
        });
      };
    },
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
    timingCapacity: (profile) => profile.totalAllocatedBytes + 8 * profile.allocs + 2 ** 20,
    load: async () => (capacity) => bump(capacity),
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
