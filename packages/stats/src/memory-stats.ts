/**
 * `memoryStats()`: the figures of `torch.cuda.memory_stats()`, under its key names, for any
 * allocator wrapped by `withStats`:
 *
 * - `<family>.<pool>.<figure>` for the families `allocated_bytes`, `reserved_bytes`, `active_bytes`,
 *   `inactive_split_bytes`, `requested_bytes`, `allocation`, `segment`, `active`, `inactive_split`;
 *   pools `all`, and `small_pool`/`large_pool` when a pool source reports them; figures `current`,
 *   `peak`, `allocated`, `freed`;
 * - `num_alloc_retries`, `num_ooms`, `num_sync_all_streams`, `num_device_alloc`, `num_device_free`,
 *   `max_split_size`, `oversize_allocations.*`, `oversize_segments.*`.
 *
 * Where the figures come from, for the `all` pool: allocated, requested and allocation counts from
 * the adaptor's counters (exact); active equals allocated (a plain allocator has no pending frees);
 * reserved bytes are the upstream's capacity, segments and inactive split figures come from its
 * layout. Those last ones are sampled on each call: `current` is exact, `peak`, `allocated` and
 * `freed` see only the values at the calls (exact for a fixed-capacity allocator). A pool that
 * implements `PoolStatsSource` overrides any of them with its own exact figures.
 */
import type { Counter } from './counters';
import type { PoolName, PoolStatsReport, StatFamily } from './pool-stats';
import type { StatsAllocator } from './with-stats';

/** Flat, sorted key → value map, as `torch.cuda.memory_stats()` returns. */
export type MemoryStats = Readonly<Record<string, number>>;

export const STAT_FAMILIES: readonly StatFamily[] = [
  'allocated_bytes',
  'reserved_bytes',
  'active_bytes',
  'inactive_split_bytes',
  'requested_bytes',
  'allocation',
  'segment',
  'active',
  'inactive_split',
];

const FIGURES = ['current', 'peak', 'allocated', 'freed'] as const;
const ZERO: Counter = { current: 0, peak: 0, allocated: 0, freed: 0 };

/** A value observed at intervals, with the four figures derived from the observations. */
class Sampled implements Counter {
  current = 0;
  peak = 0;
  allocated = 0;
  freed = 0;

  observe(value: number): Counter {
    const delta = value - this.current;
    if (delta > 0) this.allocated += delta;
    else this.freed -= delta;
    this.current = value;
    if (value > this.peak) this.peak = value;
    return { current: this.current, peak: this.peak, allocated: this.allocated, freed: this.freed };
  }
}

interface Samplers {
  peakEpoch: number;
  accumulatedEpoch: number;
  readonly reservedBytes: Sampled;
  readonly segments: Sampled;
  readonly inactiveSplitBytes: Sampled;
  readonly inactiveSplit: Sampled;
}

const samplersOf = new WeakMap<StatsAllocator, Samplers>();

function samplers(stats: StatsAllocator): Samplers {
  let s = samplersOf.get(stats);
  if (!s) {
    s = {
      peakEpoch: stats.peakEpoch,
      accumulatedEpoch: stats.accumulatedEpoch,
      reservedBytes: new Sampled(),
      segments: new Sampled(),
      inactiveSplitBytes: new Sampled(),
      inactiveSplit: new Sampled(),
    };
    samplersOf.set(stats, s);
  }
  const all = [s.reservedBytes, s.segments, s.inactiveSplitBytes, s.inactiveSplit];
  if (s.peakEpoch !== stats.peakEpoch) {
    for (const x of all) x.peak = x.current;
    s.peakEpoch = stats.peakEpoch;
  }
  if (s.accumulatedEpoch !== stats.accumulatedEpoch) {
    for (const x of all) x.allocated = x.freed = 0;
    s.accumulatedEpoch = stats.accumulatedEpoch;
  }
  return s;
}

/** Figures per family for the `all` pool, from the adaptor's own view. */
function ownFigures(stats: StatsAllocator): Record<StatFamily, Counter> {
  const totals = stats.totals();
  const usage = stats.usage();
  const figures = stats.fragmentation();
  const s = samplers(stats);
  const segments = figures?.segmentCount ?? (usage.capacity > 0 ? 1 : 0);
  const splitBytes = figures?.inactiveSplitBytes ?? (usage.liveCount > 0 ? usage.freeBytes : 0);
  const split = figures?.inactiveSplitCount ?? (usage.liveCount > 0 ? usage.freeBlockCount : 0);
  return {
    allocated_bytes: totals.allocatedBytes,
    reserved_bytes: s.reservedBytes.observe(usage.capacity),
    active_bytes: totals.allocatedBytes,
    inactive_split_bytes: s.inactiveSplitBytes.observe(splitBytes),
    requested_bytes: totals.requestedBytes,
    allocation: totals.allocations,
    segment: s.segments.observe(segments),
    active: totals.allocations,
    inactive_split: s.inactiveSplit.observe(split),
  };
}

function put(out: Record<string, number>, prefix: string, counter: Counter): void {
  for (const figure of FIGURES) out[`${prefix}.${figure}`] = counter[figure];
}

/** What the adaptor itself knows, for the figures a pool's report leaves out. */
export interface PoolStatsFallback {
  /** Figures of the `all` entries. */
  readonly all: Readonly<Record<StatFamily, Counter>>;
  /** Failed allocations, when the report has no `numOoms`. */
  readonly numOoms: number;
}

/**
 * A pool's report under the keys of `torch.cuda.memory_stats()`, sorted. Families the report's
 * `all` entry leaves out come from `fallback` (or are zero); `small_pool`/`large_pool` entries
 * appear when the report has them, or always when there is no fallback (a pool speaking for
 * itself reports both).
 */
export function flattenPoolStats(
  report: PoolStatsReport | undefined,
  fallback?: PoolStatsFallback,
): MemoryStats {
  const out: Record<string, number> = {};
  const all = report?.pools.all;
  for (const family of STAT_FAMILIES) {
    put(out, `${family}.all`, all?.[family] ?? fallback?.all[family] ?? ZERO);
  }
  for (const pool of ['small_pool', 'large_pool'] as const satisfies readonly PoolName[]) {
    const figures = report?.pools[pool];
    if (!figures && fallback) continue;
    for (const family of STAT_FAMILIES) put(out, `${family}.${pool}`, figures?.[family] ?? ZERO);
  }
  const segment = all?.segment ?? fallback?.all.segment ?? ZERO;
  out.num_alloc_retries = report?.numAllocRetries ?? 0;
  out.num_ooms = report?.numOoms ?? fallback?.numOoms ?? 0;
  out.num_sync_all_streams = report?.numSyncAllStreams ?? 0;
  out.num_device_alloc = report?.numDeviceAlloc ?? segment.allocated;
  out.num_device_free = report?.numDeviceFree ?? segment.freed;
  out.max_split_size = report?.maxSplitSize ?? -1;
  put(out, 'oversize_allocations', report?.oversizeAllocations ?? ZERO);
  put(out, 'oversize_segments', report?.oversizeSegments ?? ZERO);
  const sorted: Record<string, number> = {};
  for (const key of Object.keys(out).sort()) sorted[key] = out[key]!;
  return sorted;
}

/** `torch.cuda.memory_stats()` for an allocator wrapped by `withStats` (keys sorted). */
export function memoryStats(stats: StatsAllocator): MemoryStats {
  return flattenPoolStats(stats.poolSource?.poolStats(), {
    all: ownFigures(stats),
    numOoms: stats.totals().failures.allocated,
  });
}
