/**
 * PyTorch's allocator statistics: each family (allocations, segments, bytes reserved, ...) is kept
 * for the aggregate, the small pool and the large pool, each with four figures — `current`, `peak`,
 * `allocated` (cumulative increase) and `freed` (cumulative decrease).
 *
 * Only what cannot be derived is stored, in one Float64Array at fixed offsets, so the hot path
 * stores numbers and allocates nothing:
 * - per family and pool (small, large): `current` and `allocated`; a decrease is one store;
 * - per family: the peaks of the aggregate, the small and the large pool, checked on increases;
 * - `freed` is derived when reported: `allocated − current + base`, where `base` is the current value
 *   when the cumulative figures were last zeroed;
 * - the aggregate's `current`, `allocated` and `freed` are the sums of the two pools';
 * - `active` and `active_bytes` are the allocated blocks and bytes plus those freed but waiting for
 *   streams (pending), so their slots hold only the pending part; their cumulative increase is the
 *   allocations'. Their peaks can rise only when an allocation peak rises or while frees are
 *   pending (active ≥ allocated at all times, and both peaks restart together), so only then are
 *   they checked.
 */
import type { PoolFigures, PoolName, PoolStatsReport, StatFamily } from '@allot/stats';

/** Stat families, in slot order. The last two are reported for the aggregate only. */
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
/**
 * Doubles per family: for the small pool (at 0) and the large pool (at 4) `current`, `allocated`,
 * `peak` and `base`; then the aggregate's peak (at 8). One family's figures share two cache lines,
 * and the hot path adds literal offsets only.
 */
const STRIDE = 10;
const SLOTS = STRIDE * FAMILY_COUNT;

// Where the families the hot path touches begin.
const ALLOCATION = STRIDE * Family.Allocation;
const ACTIVE = STRIDE * Family.Active;
const INACTIVE_SPLIT = STRIDE * Family.InactiveSplit;
const ALLOCATED_BYTES = STRIDE * Family.AllocatedBytes;
const ACTIVE_BYTES = STRIDE * Family.ActiveBytes;
const INACTIVE_SPLIT_BYTES = STRIDE * Family.InactiveSplitBytes;
const REQUESTED_BYTES = STRIDE * Family.RequestedBytes;
const OVERSIZE_ALLOCATIONS = STRIDE * Family.OversizeAllocations;

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

/**
 * Adds `amount` to the family at `f`, pool figures at `o` (`f`, or `f + 4` for the large pool),
 * raising the peaks it passes; returns whether it raised one. Kept small: it is inlined at every
 * call on the hot path, within the compiler's inlining budget.
 */
function up(v: Float64Array, f: number, o: number, amount: number): boolean {
  const now = (v[o]! += amount);
  v[o + 1]! += amount;
  const all = v[f]! + v[f + 4]!;
  if (now <= v[o + 2]! && all <= v[f + 8]!) return false;
  raise(v, f, o, now, all);
  return true;
}

/** Raises the peaks of the family at `f`, pool figures at `o`, to `now` and the total to `all`. */
function raise(v: Float64Array, f: number, o: number, now: number, all: number): void {
  if (now > v[o + 2]!) v[o + 2] = now;
  if (all > v[f + 8]!) v[f + 8] = all;
}

/**
 * Raises the peaks of a derived family at `d` (`active`, `active_bytes`: pending part) over the
 * family at `a` (allocations, allocated bytes) to its current values.
 */
function raiseDerived(v: Float64Array, d: number, a: number): void {
  const small = v[a]! + v[d]!;
  const large = v[a + 4]! + v[d + 4]!;
  if (small > v[d + 2]!) v[d + 2] = small;
  if (large > v[d + 6]!) v[d + 6] = large;
  if (small + large > v[d + 8]!) v[d + 8] = small + large;
}

/** Counters of one pool owner (the whole pool, or one private pool). */
export class PoolCounters {
  private readonly values = new Float64Array(SLOTS);
  /** The figures at {@link markCycle}; after {@link endCycle}, the cycle's cumulative increases. */
  private readonly cycle = new Float64Array(SLOTS);
  /** Free (cached) blocks now. */
  cachedBlocks = 0;
  numAllocRetries = 0;
  numOoms = 0;
  numSyncAllStreams = 0;
  numDeviceAlloc = 0;
  numDeviceFree = 0;

  /** Frees waiting for streams, in both pools (then active peaks are checked on every allocation). */
  private pending = 0;

  /**
   * Adds `amount` to `family` for the aggregate and the small or large pool. Not for `active` and
   * `active_bytes`, which follow the allocations.
   */
  increase(family: Family, small: boolean, amount: number): void {
    const f = STRIDE * family;
    up(this.values, f, small ? f : f + 4, amount);
  }

  /** Subtracts `amount` from `family` for the aggregate and the small or large pool (not active). */
  decrease(family: Family, small: boolean, amount: number): void {
    this.values[STRIDE * family + (small ? 0 : 4)]! -= amount;
  }

  /** A block of `usable` bytes handed out for a request of `requested` bytes. */
  allocated(small: boolean, usable: number, requested: number, oversize: boolean): void {
    const v = this.values;
    const p = small ? 0 : 4;
    const count = up(v, ALLOCATION, ALLOCATION + p, 1);
    const bytes = up(v, ALLOCATED_BYTES, ALLOCATED_BYTES + p, usable);
    up(v, REQUESTED_BYTES, REQUESTED_BYTES + p, requested);
    if (oversize) up(v, OVERSIZE_ALLOCATIONS, OVERSIZE_ALLOCATIONS + p, 1);
    if (count || this.pending !== 0) raiseDerived(v, ACTIVE, ALLOCATION);
    if (bytes || this.pending !== 0) raiseDerived(v, ACTIVE_BYTES, ALLOCATED_BYTES);
  }

  /**
   * A block of `usable` bytes freed by the caller; `pending` when it waits for streams (it stays
   * active until {@link deactivated}).
   */
  freed(small: boolean, usable: number, oversize: boolean, pending: boolean): void {
    const v = this.values;
    const p = small ? 0 : 4;
    v[ALLOCATION + p]! -= 1;
    v[ALLOCATED_BYTES + p]! -= usable;
    if (oversize) v[OVERSIZE_ALLOCATIONS + p]! -= 1;
    if (pending) {
      this.pending++;
      v[ACTIVE + p]! += 1;
      v[ACTIVE_BYTES + p]! += usable;
    }
  }

  /**
   * A freed block of `usable` bytes for a request of `requested` bytes is free for reuse; `pending`
   * when it waited for streams.
   */
  deactivated(small: boolean, usable: number, requested: number, pending: boolean): void {
    const v = this.values;
    const p = small ? 0 : 4;
    v[REQUESTED_BYTES + p]! -= requested;
    if (pending) {
      this.pending--;
      v[ACTIVE + p]! -= 1;
      v[ACTIVE_BYTES + p]! -= usable;
    }
  }

  /**
   * A cached block of `removed` bytes leaves the cache (`removedSplit`: it was an inactive split)
   * and one of `added` bytes enters it (`addedSplit` likewise), in that order; `removed` or `added`
   * is negative when there is none.
   */
  recached(
    small: boolean,
    removedSplit: boolean,
    removed: number,
    addedSplit: boolean,
    added: number,
  ): void {
    const v = this.values;
    const p = small ? 0 : 4;
    if (removed >= 0) {
      this.cachedBlocks--;
      if (removedSplit) {
        v[INACTIVE_SPLIT + p]! -= 1;
        v[INACTIVE_SPLIT_BYTES + p]! -= removed;
      }
    }
    if (added >= 0) {
      this.cachedBlocks++;
      if (addedSplit) {
        up(v, INACTIVE_SPLIT, INACTIVE_SPLIT + p, 1);
        up(v, INACTIVE_SPLIT_BYTES, INACTIVE_SPLIT_BYTES + p, added);
      }
    }
  }

  /** Current aggregate value of `family`. */
  current(family: Family): number {
    return this.currentOf(family, 0) + this.currentOf(family, 1);
  }

  /** Current value of `family` in pool `p` (0 small, 1 large). */
  private currentOf(family: Family, p: number): number {
    const v = this.values;
    const o = 4 * p;
    const own = v[STRIDE * family + o]!;
    if (family === Family.Active) return own + v[ALLOCATION + o]!;
    if (family === Family.ActiveBytes) return own + v[ALLOCATED_BYTES + o]!;
    return own;
  }

  /** Cumulative increase of `family` in pool `p` (0 small, 1 large). */
  private allocatedOf(family: Family, p: number): number {
    const v = this.values;
    const o = 4 * p + 1;
    if (family === Family.Active) return v[ALLOCATION + o]!;
    if (family === Family.ActiveBytes) return v[ALLOCATED_BYTES + o]!;
    return v[STRIDE * family + o]!;
  }

  /** Sets every peak to its current value (`reset_peak_memory_stats`). */
  resetPeak(): void {
    const v = this.values;
    for (let family = 0; family < FAMILY_COUNT; family++) {
      const f = STRIDE * family;
      const small = this.currentOf(family as Family, 0);
      const large = this.currentOf(family as Family, 1);
      v[f + 2] = small;
      v[f + 6] = large;
      v[f + 8] = small + large;
    }
  }

  /** Zeroes the cumulative figures and the event counts (`reset_accumulated_memory_stats`). */
  resetAccumulated(): void {
    const v = this.values;
    for (let family = 0; family < FAMILY_COUNT; family++) {
      for (let p = 0; p < 2; p++) {
        const o = STRIDE * family + 4 * p;
        v[o + 3] = this.currentOf(family as Family, p);
        v[o + 1] = 0;
      }
    }
    this.numAllocRetries = 0;
    this.numOoms = 0;
    this.numSyncAllStreams = 0;
    this.numDeviceAlloc = 0;
    this.numDeviceFree = 0;
  }

  /**
   * Starts measuring a cycle: a run of calls after which every current figure is back where it
   * was (the hot cycle of `parked-free.ts`). {@link endCycle} ends it.
   */
  markCycle(): void {
    this.cycle.set(this.values);
  }

  /** Ends the cycle {@link markCycle} started: its cumulative increase is kept. */
  endCycle(): void {
    const v = this.values;
    const c = this.cycle;
    for (let i = 0; i < SLOTS; i++) c[i] = v[i]! - c[i]!;
  }

  /**
   * Counts `n` more repeats of the measured cycle. A repeat passes through the same figures as the
   * cycle did, so only the cumulative increases move; no peak can rise, since the cycle's own
   * figures were checked against the peaks (reset the peaks only between cycles).
   */
  repeatCycle(n: number): void {
    const v = this.values;
    const c = this.cycle;
    // The `allocated` slots of the small (1) and large (5) pool in each family's stride.
    for (let f = 0; f < SLOTS; f += STRIDE) {
      v[f + 1]! += n * c[f + 1]!;
      v[f + 5]! += n * c[f + 5]!;
    }
  }

  /** Everything current counts as freed (after a reset that forgot every block). */
  dropCurrent(): void {
    // freed = allocated − current + base: zeroing current adds it to freed.
    const v = this.values;
    for (let f = 0; f < SLOTS; f += STRIDE) {
      v[f] = 0;
      v[f + 4] = 0;
    }
    this.cachedBlocks = 0;
    this.pending = 0;
  }

  /** The figures as `@allot/stats` and `memoryStats()` want them. */
  report(maxSplitSize: number): Omit<PoolStatsReport, 'allocatorSettings'> {
    const pools: Partial<Record<'all' | PoolName, PoolFigures>> = {};
    const names = ['all', 'small_pool', 'large_pool'] as const;
    for (let p = 0; p < 3; p++) {
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

  /** Figures of `family` for pool 0 (aggregate), 1 (small) or 2 (large). */
  private counter(family: Family, pool: number) {
    const v = this.values;
    const f = STRIDE * family;
    const figure = (of: (p: number) => number) => (pool === 0 ? of(0) + of(1) : of(pool - 1));
    const current = figure((p) => this.currentOf(family, p));
    const allocated = figure((p) => this.allocatedOf(family, p));
    return {
      current,
      peak: v[pool === 0 ? f + 8 : f + 4 * (pool - 1) + 2]!,
      allocated,
      freed: allocated - current + figure((p) => v[f + 4 * p + 3]!),
    };
  }
}
