/**
 * PyTorch's allocator statistics: each family (allocations, segments, bytes reserved, ...) is kept
 * for the aggregate, the small pool and the large pool, each with four figures — `current`, `peak`,
 * `allocated` (cumulative increase) and `freed` (cumulative decrease) — in one Float64Array at fixed
 * offsets, so the hot path stores numbers and allocates nothing.
 */
import type { PoolFigures, PoolName, PoolStatsReport, StatFamily } from '@allot/stats';

/** Stat families, in slot order. The last two are kept for the aggregate only. */
export const Family = {
  Allocation: 0,
  Segment: 1,
  Active: 2,
  InactiveSplit: 3,
  AllocatedBytes: 4,
  ReservedBytes: 5,
  ActiveBytes: 6,
  InactiveSplitBytes: 7,
  RequestedBytes: 8,
  OversizeAllocations: 9,
  OversizeSegments: 10,
} as const;
export type Family = (typeof Family)[keyof typeof Family];

const FAMILY_COUNT = 11;
/** all, small_pool, large_pool. */
const POOLS = 3;
/** current, peak, allocated, freed. */
const FIGURES = 4;
const CURRENT = 0;
const PEAK = 1;
const ALLOCATED = 2;
const FREED = 3;

const STAT_NAMES: readonly [StatFamily, Family][] = [
  ['allocation', Family.Allocation],
  ['segment', Family.Segment],
  ['active', Family.Active],
  ['inactive_split', Family.InactiveSplit],
  ['allocated_bytes', Family.AllocatedBytes],
  ['reserved_bytes', Family.ReservedBytes],
  ['active_bytes', Family.ActiveBytes],
  ['inactive_split_bytes', Family.InactiveSplitBytes],
  ['requested_bytes', Family.RequestedBytes],
];

/** Counters of one pool owner (the whole pool, or one private pool). */
export class PoolCounters {
  private readonly values = new Float64Array(FAMILY_COUNT * POOLS * FIGURES);
  /** Free (cached) blocks now. */
  cachedBlocks = 0;
  numAllocRetries = 0;
  numOoms = 0;
  numSyncAllStreams = 0;
  numDeviceAlloc = 0;
  numDeviceFree = 0;

  /** Adds `amount` to `family` for the aggregate and the small or large pool. */
  increase(family: Family, small: boolean, amount: number): void {
    const base = family * POOLS * FIGURES;
    this.up(base, amount);
    this.up(base + (small ? FIGURES : 2 * FIGURES), amount);
  }

  /** Subtracts `amount` from `family` for the aggregate and the small or large pool. */
  decrease(family: Family, small: boolean, amount: number): void {
    const base = family * POOLS * FIGURES;
    this.down(base, amount);
    this.down(base + (small ? FIGURES : 2 * FIGURES), amount);
  }

  /** Current aggregate value of `family`. */
  current(family: Family): number {
    return this.values[family * POOLS * FIGURES]!;
  }

  /** Sets every peak to its current value (`reset_peak_memory_stats`). */
  resetPeak(): void {
    const v = this.values;
    for (let o = 0; o < v.length; o += FIGURES) v[o + PEAK] = v[o + CURRENT]!;
  }

  /** Zeroes the cumulative figures and the event counts (`reset_accumulated_memory_stats`). */
  resetAccumulated(): void {
    const v = this.values;
    for (let o = 0; o < v.length; o += FIGURES) {
      v[o + ALLOCATED] = 0;
      v[o + FREED] = 0;
    }
    this.numAllocRetries = 0;
    this.numOoms = 0;
    this.numSyncAllStreams = 0;
    this.numDeviceAlloc = 0;
    this.numDeviceFree = 0;
  }

  /** Everything current counts as freed (after a reset that forgot every block). */
  dropCurrent(): void {
    const v = this.values;
    for (let o = 0; o < v.length; o += FIGURES) {
      v[o + FREED]! += v[o + CURRENT]!;
      v[o + CURRENT] = 0;
    }
    this.cachedBlocks = 0;
  }

  /** The figures as `@allot/stats` and `memoryStats()` want them. */
  report(maxSplitSize: number): Omit<PoolStatsReport, 'allocatorSettings'> {
    const pools: Partial<Record<'all' | PoolName, PoolFigures>> = {};
    const names = ['all', 'small_pool', 'large_pool'] as const;
    for (let p = 0; p < POOLS; p++) {
      const figures: Partial<Record<StatFamily, ReturnType<PoolCounters['counter']>>> = {};
      for (const [name, family] of STAT_NAMES) figures[name] = this.counter(family, p);
      pools[names[p]!] = figures;
    }
    return {
      pools,
      numAllocRetries: this.numAllocRetries,
      numOoms: this.numOoms,
      numSyncAllStreams: this.numSyncAllStreams,
      numDeviceAlloc: this.numDeviceAlloc,
      numDeviceFree: this.numDeviceFree,
      maxSplitSize: maxSplitSize === Number.POSITIVE_INFINITY ? -1 : maxSplitSize,
      oversizeAllocations: this.counter(Family.OversizeAllocations, 0),
      oversizeSegments: this.counter(Family.OversizeSegments, 0),
    };
  }

  private counter(family: Family, pool: number) {
    const o = (family * POOLS + pool) * FIGURES;
    const v = this.values;
    return {
      current: v[o]!,
      peak: v[o + PEAK]!,
      allocated: v[o + ALLOCATED]!,
      freed: v[o + FREED]!,
    };
  }

  private up(o: number, amount: number): void {
    const v = this.values;
    const now = (v[o]! += amount);
    if (now > v[o + PEAK]!) v[o + PEAK] = now;
    v[o + ALLOCATED]! += amount;
  }

  private down(o: number, amount: number): void {
    const v = this.values;
    v[o]! -= amount;
    v[o + FREED]! += amount;
  }
}
