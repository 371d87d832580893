/**
 * Counters: each tracked quantity has four figures, as in RMM's statistics adaptor and PyTorch's
 * `memory_stats()`: `current`, `peak` (highest `current` since the last peak reset), `allocated`
 * (cumulative increase) and `freed` (cumulative decrease).
 *
 * The hot path writes them into one `Float64Array` at fixed offsets (no object per call). Scopes
 * (`push`/`pop`) keep one such array per level; popping folds the child into its parent the way RMM
 * does: `parent.peak = max(parent.peak, parent.current + child.peak)`, then the other figures add.
 *
 * `freed` is not written on the hot path: since `current` only moves by what is allocated or freed,
 * `freed = allocated − current + base`, where the FREED slot holds `base` (the `current` of the last
 * `resetAccumulated()`, adjusted when a scope is folded in). A free then updates `current` alone.
 * Every figure is an integer below 2^53, so the subtraction is exact.
 */

/** Four figures of one tracked quantity. */
export interface Counter {
  /** Value now (bytes or a count). May be negative inside a scope that frees older blocks. */
  readonly current: number;
  /** Highest `current` since the last `resetPeak()`. */
  readonly peak: number;
  /** Cumulative increase since the last `resetAccumulated()`. */
  readonly allocated: number;
  /** Cumulative decrease since the last `resetAccumulated()`. */
  readonly freed: number;
}

/** Every counter `withStats` keeps. */
export interface Counters {
  /** Bytes callers asked for. */
  readonly requestedBytes: Counter;
  /** Usable bytes of the blocks handed out (what `usableSize` reports). */
  readonly allocatedBytes: Counter;
  /** Live allocations (a count). */
  readonly allocations: Counter;
  /**
   * Failed allocations (a count): `current` counts failures since the scope began (never goes
   * down), `allocated` counts them since the last `resetAccumulated()`, `freed` stays 0.
   */
  readonly failures: Counter;
}

/** Offsets of the four figures inside a counter's slot. */
export const CURRENT = 0;
export const PEAK = 1;
export const ALLOCATED = 2;
/** Not `freed` itself but its base: see {@link freedOf}. */
export const FREED = 3;
/** Figures per counter. */
export const FIGURES = 4;

/** Slot offsets of each counter inside a counter array. */
export const REQUESTED_BYTES = 0;
export const ALLOCATED_BYTES = 4;
export const ALLOCATIONS = 8;
export const FAILURES = 12;
/** Length of a counter array. */
export const COUNTER_ARRAY_LENGTH = 16;

const SLOTS = [REQUESTED_BYTES, ALLOCATED_BYTES, ALLOCATIONS, FAILURES] as const;

/** A zeroed counter array. */
export function newCounterArray(): Float64Array {
  return new Float64Array(COUNTER_ARRAY_LENGTH);
}

/** The `freed` figure of the counter in `slot`: `allocated − current + base`. */
export function freedOf(counters: Float64Array, slot: number): number {
  return counters[slot + ALLOCATED]! - counters[slot + CURRENT]! + counters[slot + FREED]!;
}

/** Folds `child` (a finished scope) into `parent`, in place. */
export function foldInto(parent: Float64Array, child: Float64Array): void {
  for (const slot of SLOTS) {
    const freed = freedOf(parent, slot) + freedOf(child, slot);
    const peak = parent[slot + CURRENT]! + child[slot + PEAK]!;
    if (peak > parent[slot + PEAK]!) parent[slot + PEAK] = peak;
    parent[slot + CURRENT]! += child[slot + CURRENT]!;
    parent[slot + ALLOCATED]! += child[slot + ALLOCATED]!;
    parent[slot + FREED] = freed - parent[slot + ALLOCATED]! + parent[slot + CURRENT]!;
  }
}

/** Sets every peak to the current value. */
/**
 * Resets peaks across nested scopes, `levels` from the outermost to the innermost (the one being
 * counted now). A scope's peak counts its inner scopes' activity on top of its own current, so
 * each level's peak becomes its inclusive current: its own plus every inner level's. Folded
 * totals then read `peak === current`, as after a reset they must.
 */
export function resetPeaks(levels: readonly Float64Array[]): void {
  for (const slot of SLOTS) {
    let inclusive = 0;
    for (let i = levels.length - 1; i >= 0; i--) {
      const level = levels[i]!;
      inclusive += level[slot + CURRENT]!;
      level[slot + PEAK] = inclusive;
    }
  }
}

/** Zeroes the cumulative figures. */
export function resetAccumulated(counters: Float64Array): void {
  for (const slot of SLOTS) {
    counters[slot + ALLOCATED] = 0;
    counters[slot + FREED] = counters[slot + CURRENT]!; // freed = 0 − current + current
  }
}

function counterAt(counters: Float64Array, slot: number): Counter {
  return {
    current: counters[slot + CURRENT]!,
    peak: counters[slot + PEAK]!,
    allocated: counters[slot + ALLOCATED]!,
    freed: freedOf(counters, slot),
  };
}

/** A plain-object copy of a counter array. */
export function readCounters(counters: Float64Array): Counters {
  return {
    requestedBytes: counterAt(counters, REQUESTED_BYTES),
    allocatedBytes: counterAt(counters, ALLOCATED_BYTES),
    allocations: counterAt(counters, ALLOCATIONS),
    failures: counterAt(counters, FAILURES),
  };
}
