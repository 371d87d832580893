/**
 * The smallest capacity on which a workload runs without a failed allocation (as RMM's
 * `replay_benchmark` reports it), shared by the lab's `capacity` command and the benchmarks.
 *
 * Search: start at peak live bytes (nothing smaller can work), grow by ×1.25 then ×2 until a probe
 * succeeds (or the row's maximum fails), then bisect between the last failure and the first success
 * until the gap is under `relativePrecision` of the answer, in multiples of `granularity` bytes.
 * Each probe is a fresh allocator (the caller's `probe`). Strategies are not guaranteed to be
 * monotonic in capacity (a buddy system's layout changes with it), so the answer is the smallest
 * success the bisection met, an upper bound on the true minimum within the stated precision.
 */

/** What one probe says: it fits, it does not, or time ran out before it could tell. */
export type ProbeOutcome = 'fits' | 'fails' | 'timeout';

/** Options of {@link searchCapacity}. */
export interface CapacitySearchOptions {
  /** Peak live bytes of the workload: the search's lower end. */
  readonly peakLiveBytes: number;
  /** Largest capacity the allocator can manage. */
  readonly maxCapacity: number;
  /** Replays the workload on a fresh allocator of `capacity` bytes. */
  readonly probe: (capacity: number) => ProbeOutcome;
  /** Stop when `(high − low) ≤ relativePrecision × high`. @defaultValue 0.001 */
  readonly relativePrecision?: number;
  /** Capacities probed are multiples of this. @defaultValue 8 */
  readonly granularity?: number;
  /** `performance.now()` after which no new probe starts. @defaultValue Infinity */
  readonly deadline?: number;
  /** Clock, for tests. @defaultValue performance.now */
  readonly now?: () => number;
}

/** Outcome of {@link searchCapacity}. */
export interface CapacitySearchResult {
  /**
   * `exact`: found within the precision; `upper-bound`: time ran out, `capacity` is the smallest
   * success so far; `none`: no capacity up to the maximum works; `timeout`: no success before the
   * deadline.
   */
  readonly status: 'exact' | 'upper-bound' | 'none' | 'timeout';
  /** Smallest capacity that worked, or null. */
  readonly capacity: number | null;
  /** Largest capacity that failed (peak live − 1 when none was probed). */
  readonly largestFailure: number;
  readonly probes: number;
}

/** Runs the search; see the module comment. */
export function searchCapacity(options: CapacitySearchOptions): CapacitySearchResult {
  const {
    peakLiveBytes,
    maxCapacity,
    probe,
    relativePrecision = 0.001,
    granularity = 8,
    deadline = Number.POSITIVE_INFINITY,
    now = () => performance.now(),
  } = options;
  const roundUp = (value: number): number => Math.ceil(value / granularity) * granularity;
  let low = Math.max(0, peakLiveBytes - 1);
  let high: number | null = null;
  let probes = 0;

  // Grow until something fits.
  let candidate = Math.min(maxCapacity, roundUp(Math.max(peakLiveBytes, granularity)));
  let factor = 1.25;
  for (;;) {
    if (now() > deadline) return { status: 'timeout', capacity: null, largestFailure: low, probes };
    probes++;
    const outcome = probe(candidate);
    if (outcome === 'timeout')
      return { status: 'timeout', capacity: null, largestFailure: low, probes };
    if (outcome === 'fits') {
      high = candidate;
      break;
    }
    low = candidate;
    if (candidate >= maxCapacity)
      return { status: 'none', capacity: null, largestFailure: low, probes };
    candidate = Math.min(maxCapacity, roundUp(candidate * factor));
    factor = 2;
  }

  // Bisect between the largest failure and the smallest success.
  while (high - low > Math.max(granularity, relativePrecision * high)) {
    if (now() > deadline)
      return { status: 'upper-bound', capacity: high, largestFailure: low, probes };
    const middle = roundUp(low + (high - low) / 2);
    if (middle >= high) break;
    probes++;
    const outcome = probe(middle);
    if (outcome === 'timeout')
      return { status: 'upper-bound', capacity: high, largestFailure: low, probes };
    if (outcome === 'fits') high = middle;
    else low = middle;
  }
  return { status: 'exact', capacity: high, largestFailure: low, probes };
}
