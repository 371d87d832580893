/**
 * The lab's allocator rows: a name, the recipe shown in reports, and a factory that builds an
 * instance for one trace.
 *
 * Two kinds of rows, and what "reserved" means for each:
 * - **Ranges** (first fit, best fit, good fit, buddy, the slab + best-fit hybrid) place blocks in a
 *   fixed range. Their reserved memory is the high-water mark, `max(address + size) − base`: the
 *   capacity a range must offer for this run. Their layouts are clipped at it, so the free tail of a
 *   generous range does not count as free memory.
 * - **Pools** (the caching pool) grow over a memory source. Their reserved memory is what the source
 *   handed out: an address-only source (`addressSource` from @allot/workloads), so a pool can replay
 *   a model of tens of GiB without the memory behind it. A pool replaying a recording that states
 *   its starting state (a PyTorch snapshot) restores those segments and live blocks first, so its
 *   figures are in the units of `torch.cuda.memory_stats()`.
 *
 * Without `--capacity`, a range gets 4 × peak live bytes (a power of two, at least 1 MiB) and a pool
 * an unlimited source; with it, every row gets that capacity (the hybrid splits it between its sides
 * in proportion to their peak live bytes) and failed allocations show who would run out.
 */
import { bestFit, goodFit } from '@allot/best-fit';
import { buddy } from '@allot/buddy';
import { type AllocatorSettings, DEFAULT_SETTINGS, formatAllocConf } from '@allot/caching';
import { type Allocator, type Layout, nextPowerOfTwo, segregate } from '@allot/core';
import { firstFit } from '@allot/first-fit';
import { slab } from '@allot/slab';
import { summarizeTrace, type Trace } from '@allot/workloads';
import { type DeviceModel, EXPANDABLE_SETTINGS, poolInstance } from './pool-instance';
import type { RowInstance } from './row-instance';
import { tunedMaxSplit } from './tune';

export { type DeviceModel, EXPANDABLE_SETTINGS, UNLIMITED_DEVICE } from './pool-instance';
export type { RowInstance, SegmentDecisions } from './row-instance';
export { beginReplay } from './row-instance';

/** Requests up to this size become slab objects in the hybrid. */
export const HYBRID_THRESHOLD = 256;
/** Bytes of one slab of the hybrid: a page, so a size class never strands more than a page. */
export const HYBRID_SLAB_SIZE = 4096;

/** What a factory may know about the trace it will replay. */
export interface TraceProfile {
  readonly peakLiveBytes: number;
  readonly maxSize: number;
}

/** The profile of `trace`. */
export function profileOf(trace: Trace): TraceProfile {
  const summary = summarizeTrace(trace);
  return {
    peakLiveBytes: summary.peakLiveBytes,
    maxSize: summary.maxSize,
  };
}

/** Where a row's memory lives. */
export type RowKind = 'range' | 'pool';

/** A row of the lab. */
export interface LabRow {
  readonly name: string;
  readonly kind: RowKind;
  /** How the row is built, for the report. */
  readonly recipe: string;
  /** For a caching row: the canonical `PYTORCH_CUDA_ALLOC_CONF` of its settings. */
  readonly config?: string;
  create(
    trace: Trace,
    profile: TraceProfile,
    capacity: number | null,
    device?: DeviceModel,
  ): RowInstance;
}

const MIB = 2 ** 20;

/** Capacity of a range without `--capacity`: 4 × peak live, a power of two, at least 1 MiB. */
export function defaultRangeCapacity(profile: TraceProfile): number {
  return nextPowerOfTwo(Math.max(4 * profile.peakLiveBytes, 2 * profile.maxSize, MIB));
}

/** A layout with every segment clipped at `base + extent` (the free tail of a range dropped). */
function clipLayout(layout: Layout, base: number, extent: number): Layout {
  const limit = base + extent;
  const segments = [];
  for (const segment of layout.segments) {
    if (segment.address >= limit) continue;
    const end = Math.min(segment.address + segment.size, limit);
    const blocks = [];
    for (const block of segment.blocks) {
      if (block.address >= end) break;
      if (block.address + block.size <= end) blocks.push(block);
      else blocks.push({ ...block, size: end - block.address });
    }
    segments.push({ ...segment, size: end - segment.address, blocks });
  }
  return { segments };
}

function rangeInstance(allocator: Allocator, base = 0): RowInstance {
  return {
    target: allocator,
    layout: (state) => clipLayout(allocator.layout!(), base, state.highWater),
    reserved: (state) => state.highWater,
    peakReserved: (state) => state.highWater,
    reset: () => allocator.reset(),
  };
}

/** An allocator whose high-water mark is tracked (the hybrid's shared range). */
interface Tracked extends Allocator {
  highWater: number;
}

function trackHighWater(inner: Allocator, base: number): Tracked {
  const tracked: Tracked = {
    highWater: 0,
    alignment: inner.alignment,
    allocate(size, alignment) {
      const address = inner.allocate(size, alignment);
      if (address !== null) {
        const top = address + inner.usableSize(address) - base;
        if (top > tracked.highWater) tracked.highWater = top;
      }
      return address;
    },
    free: (address) => inner.free(address),
    usableSize: (address) => inner.usableSize(address),
    owns: (address) => inner.owns(address),
    usage: () => inner.usage(),
    reset() {
      inner.reset();
      tracked.highWater = 0;
    },
    layout: () => inner.layout!(),
  };
  return tracked;
}

/**
 * Slab objects for requests up to 256 B, cut from the same best-fit range that serves larger
 * requests: one range, so its high-water mark is everything the hybrid reserves, slabs included.
 */
function hybridInstance(profile: TraceProfile, capacity: number | null): RowInstance {
  const range = trackHighWater(
    bestFit({ capacity: capacity ?? defaultRangeCapacity(profile), alignment: 8 }),
    0,
  );
  const hybrid = segregate({
    threshold: HYBRID_THRESHOLD,
    small: slab({ upstream: range, slabSize: HYBRID_SLAB_SIZE }),
    large: range,
  });
  return {
    target: hybrid,
    // Slabs are live blocks of the range, so the range's layout shows everything.
    layout: () => clipLayout(range.layout!(), 0, range.highWater),
    reserved: () => range.highWater,
    peakReserved: () => range.highWater,
    reset: () => hybrid.reset(),
  };
}

/**
 * A caching-pool row with `settings`; its results carry `config`: the string the user gave, or the
 * canonical one.
 */
export function cachingRow(
  name: string,
  settings: AllocatorSettings,
  recipe = `cachingPool({ config: '${formatAllocConf(settings)}' }) over an address-only source`,
  config = formatAllocConf(settings),
): LabRow {
  return {
    name,
    kind: 'pool',
    recipe,
    config,
    create: (trace, _profile, capacity, device) => poolInstance(settings, trace, capacity, device),
  };
}

/** Every row, in table order. */
export const ROWS: readonly LabRow[] = [
  {
    name: 'first-fit',
    kind: 'range',
    recipe: 'firstFit({ capacity, alignment: 8 }): lowest address that fits',
    create: (_trace, profile, capacity) =>
      rangeInstance(
        firstFit({ capacity: capacity ?? defaultRangeCapacity(profile), alignment: 8 }),
      ),
  },
  {
    name: 'best-fit',
    kind: 'range',
    recipe: 'bestFit({ capacity, alignment: 8 }): smallest block that fits, lowest address on ties',
    create: (_trace, profile, capacity) =>
      rangeInstance(bestFit({ capacity: capacity ?? defaultRangeCapacity(profile), alignment: 8 })),
  },
  {
    name: 'good-fit',
    kind: 'range',
    recipe: 'goodFit({ capacity, alignment: 8 }): TLSF-style O(1) segregated fit',
    create: (_trace, profile, capacity) =>
      rangeInstance(goodFit({ capacity: capacity ?? defaultRangeCapacity(profile), alignment: 8 })),
  },
  {
    name: 'buddy',
    kind: 'range',
    recipe: 'buddy({ capacity }): power-of-two blocks, split and merged with their buddy',
    create: (_trace, profile, capacity) =>
      rangeInstance(buddy({ capacity: capacity ?? defaultRangeCapacity(profile) })),
  },
  {
    name: 'slab+best-fit',
    kind: 'range',
    recipe:
      'range = bestFit(…); segregate({ threshold: 256 B, small: slab({ upstream: range, slabSize: 4 KiB }), ' +
      'large: range }): reserved = the range’s high-water mark, slabs included',
    create: (_trace, profile, capacity) => hybridInstance(profile, capacity),
  },
  cachingRow(
    'caching',
    DEFAULT_SETTINGS,
    "cachingPool({ source: addressSource(), config: '' }): PyTorch's defaults",
  ),
  cachingRow(
    'caching-expandable',
    EXPANDABLE_SETTINGS,
    "cachingPool({ config: 'expandable_segments:True' }) over a growable address source",
  ),
  {
    name: 'caching-tuned',
    kind: 'pool',
    recipe:
      "cachingPool({ config: 'max_split_size_mb:N' }), N the value (20 MiB–4 GiB) with the lowest " +
      'peak reserved on this trace (searched once, without a capacity limit)',
    create: (trace, _profile, capacity, device) => {
      const best = tunedMaxSplit(trace);
      const settings =
        best === null ? DEFAULT_SETTINGS : { ...DEFAULT_SETTINGS, maxSplitSize: best };
      const config = formatAllocConf(settings);
      return poolInstance(
        settings,
        trace,
        capacity,
        device,
        best === null ? 'defaults best' : config,
      );
    },
  },
];

/** Row names, in table order. */
export const ROW_NAMES: readonly string[] = ROWS.map((row) => row.name);

/** The row named `name`, or undefined. */
export function findRow(name: string): LabRow | undefined {
  return ROWS.find((row) => row.name === name);
}
