/**
 * The lab's allocator rows: a name, the recipe shown in reports, and a factory that builds an
 * instance for one trace.
 *
 * Two kinds of rows, and what "reserved" means for each:
 * - **Ranges** (the strategies of `strategies.ts`, shared with the benchmarks: first fit, best fit,
 *   good fit, buddy, the slab + best-fit hybrid, and next fit, worst fit and slab over buddy on
 *   request) place blocks in a fixed range. Their reserved memory is the high-water mark,
 *   `max(address + size) − base`: the capacity a range must offer for this run. Their layouts are clipped at it, so the free tail of a
 *   generous range does not count as free memory.
 * - **Pools** (the caching pool) grow over a memory source. Their reserved memory is what the source
 *   handed out: an address-only source (`addressSource` from @allot/workloads), so a pool can replay
 *   a model of tens of GiB without the memory behind it. A pool replaying a recording that states
 *   its starting state (a PyTorch snapshot) restores those segments and live blocks first, so its
 *   figures are in the units of `torch.cuda.memory_stats()`.
 *
 * Without `--capacity`, a range gets 4 × peak live bytes (a power of two, at least 1 MiB) and a pool
 * an unlimited source; with it, every row gets that capacity and failed allocations show who would
 * run out.
 */
import { type AllocatorSettings, DEFAULT_SETTINGS, formatAllocConf } from '@allot/caching';
import { type Allocator, type Layout, nextPowerOfTwo } from '@allot/core';
import { summarizeTrace, type Trace } from '@allot/workloads';
import { findStrategy, STRATEGIES, type Strategy } from '../strategies';
import { type DeviceModel, searchDevice } from './device';
import { EXPANDABLE_SETTINGS, poolInstance } from './pool-instance';
import type { RowInstance } from './row-instance';
import {
  MAX_SPLIT_VALUES_MB,
  type PoolRun,
  ROUNDUP_DIVISIONS,
  type TuneOptions,
  type TuneResult,
  tune,
} from './tune';

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

/**
 * Capacity of a range without `--capacity`: 4 × peak live, a power of two, at least 1 MiB, plus
 * what the strategy holds whatever the workload (`headroom`: slab's one slab per size class).
 */
export function defaultRangeCapacity(profile: TraceProfile, headroom = 0): number {
  return nextPowerOfTwo(Math.max(4 * profile.peakLiveBytes, 2 * profile.maxSize, MIB) + headroom);
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
 * A strategy whose memory comes from an inner range (slabs cut from it): the inner range's
 * high-water mark is everything the row reserves, slabs included, and its layout shows everything
 * (slabs are live blocks of the range).
 */
function layeredInstance(strategy: Strategy, capacity: number): RowInstance {
  let range: Tracked | null = null;
  const target = strategy.build(capacity, (inner) => {
    range = trackHighWater(inner, 0);
    return range;
  });
  const tracked = range as Tracked | null;
  if (tracked === null) throw new Error(`${strategy.name} did not build its inner range`);
  return {
    target,
    layout: () => clipLayout(tracked.layout!(), 0, tracked.highWater),
    reserved: () => tracked.highWater,
    peakReserved: () => tracked.highWater,
    reset() {
      // A slab gives its slabs back on reset but leaves its upstream as it is: reset the range too.
      target.reset();
      tracked.reset();
    },
  };
}

/** The lab row of `strategy`. */
function strategyRow(strategy: Strategy): LabRow {
  return {
    name: strategy.name,
    kind: 'range',
    recipe: `${strategy.recipe}: ${strategy.summary}${
      strategy.layered ? '; reserved = the range’s high-water mark, slabs included' : ''
    }`,
    create: (_trace, profile, capacity) => {
      const bytes = capacity ?? defaultRangeCapacity(profile, strategy.headroom);
      return strategy.layered
        ? layeredInstance(strategy, bytes)
        : rangeInstance(strategy.build(bytes));
    },
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

/** Name of the row replaying the setting `allot-lab tune` recommends. */
export const TUNED_ROW = 'caching-tuned';

/** What the tuner searches, in words (`fraction`: whether a per-process fraction is set). */
export function searchedKnobs(fraction: boolean): string {
  const mb = (n: number) => (n >= 1024 ? `${n / 1024} GiB` : `${n} MiB`);
  return (
    `max_split_size_mb (${mb(MAX_SPLIT_VALUES_MB[0])} to ${mb(MAX_SPLIT_VALUES_MB.at(-1)!)}), ` +
    `roundup_power2_divisions (${ROUNDUP_DIVISIONS[0]} to ${ROUNDUP_DIVISIONS.at(-1)}) and expandable_segments` +
    (fraction ? ', and garbage_collection_threshold under the per-process fraction' : '')
  );
}

const tunings = new WeakMap<Trace, Map<string, TuneResult>>();

/**
 * `tune()` on `trace`, searched once per trace and device: the caching-tuned row, the report's
 * advice, the terminal's recommendation and `--json` all read this one search.
 */
export function tuningOf(trace: Trace, options: TuneOptions = {}): TuneResult {
  const { device } = searchDevice(trace, options);
  const key = `${device.memory}/${device.fraction}`;
  let byDevice = tunings.get(trace);
  if (byDevice === undefined) {
    byDevice = new Map();
    tunings.set(trace, byDevice);
  }
  let result = byDevice.get(key);
  if (result === undefined) {
    result = tune(trace, options);
    byDevice.set(key, result);
  }
  return result;
}

/**
 * The setting a search recommends, the one the caching-tuned row replays: its best, which `tune`
 * never predicts worse than the defaults unless it fails fewer allocations (`advice.ts` words it).
 */
export function recommendedRun(result: TuneResult): PoolRun {
  return result.best;
}

const STRATEGY_ROWS = STRATEGIES.map(strategyRow);
const inTable = (row: LabRow) => findStrategy(row.name)?.inLabTable ?? true;

/** Every row, in table order: the ranges, then the caching pools. */
export const ALL_ROWS: readonly LabRow[] = [
  ...STRATEGY_ROWS,
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
    name: TUNED_ROW,
    kind: 'pool',
    recipe:
      'cachingPool({ config }) with the PYTORCH_CUDA_ALLOC_CONF that `allot-lab tune` recommends for this trace: ' +
      `a coordinate descent over ${searchedKnobs(false)} (and garbage_collection_threshold under --fraction), ` +
      'searched once per trace on the device tune assumes or you state',
    create: (trace, _profile, capacity, device) => {
      const tuning = tuningOf(trace, device);
      const run = recommendedRun(tuning);
      const note =
        run.config === ''
          ? `defaults best of ${tuning.tried.length} tried`
          : formatAllocConf(run.settings);
      return poolInstance(run.settings, trace, capacity, device, note);
    },
  },
];

/** The rows a run shows without `--allocators`, in table order. */
export const ROWS: readonly LabRow[] = ALL_ROWS.filter(inTable);

/** Names of the rows a run shows without `--allocators`. */
export const ROW_NAMES: readonly string[] = ROWS.map((row) => row.name);

/** Names of every row `--allocators` accepts: the default rows, then those shown on request. */
export const ALL_ROW_NAMES: readonly string[] = [
  ...ROW_NAMES,
  ...ALL_ROWS.filter((row) => !ROWS.includes(row)).map((row) => row.name),
];

/** The row named `name`, or undefined. */
export function findRow(name: string): LabRow | undefined {
  return ALL_ROWS.find((row) => row.name === name);
}
