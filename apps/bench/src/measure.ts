/**
 * Measuring one allocator on one workload, inside a worker process (see `worker.ts`).
 *
 * Timing: a fresh allocator at the timing capacity per run (or, when construction is slow, one
 * allocator emptied between runs); events before the workload's
 * steady state (`meta.steadyFrom`, the fill of a random mix) are replayed untimed, then the rest is
 * timed in slices of at most {@link MAX_SLICE} events with `performance.now()` read between slices, so a run
 * stops at its deadline (and is marked partial) instead of running for minutes. Before the timed
 * runs, whole replays run untimed for `warmupMs` so the JIT has compiled the replay loop and the
 * allocator. The figure is the median ns/event over the runs, in the process's CPU time (deadlines
 * stay on the wall clock).
 *
 * Memory: {@link searchCapacity} with a fresh allocator per probe, stopping each probe at its first
 * failed allocation; skipped when a timed run could not even finish the trace in its budget.
 */
import { type ProbeOutcome, Replayer, searchCapacity, type Trace } from '@allot/workloads';
import type { AllocatorFactory, WorkloadProfile } from './registry';
import type { BenchSettings } from './settings';

/** Events replayed between two clock reads, at most; slices start at {@link MIN_SLICE}. */
export const MAX_SLICE = 4096;
/** First slice: small, so a row that takes milliseconds per event still stops near its deadline. */
export const MIN_SLICE = 16;
/** Construction time above which timed runs reuse one allocator instead of making a fresh one. */
const REUSE_ABOVE_MS = 50;
/** A slice grows (doubles) while it takes less than this many ms. */
const SLICE_GROWTH_MS = 1;

/** The figures of one (allocator, workload) cell. */
export interface CellResult {
  readonly allocator: string;
  readonly workload: string;
  /** Median ns per event of the timed part; null when skipped or failed. */
  readonly nsPerOp: number | null;
  /** ns per event of each run (of every process, when merged). */
  readonly runs: number[];
  /** Each worker process's median, when the figure is the median over several. */
  readonly processMedians?: number[];
  /** Whether every run stopped at its deadline before the end (the figure covers a prefix). */
  readonly partial: boolean;
  /** Events timed per run (the smallest over the runs). */
  readonly timedEvents: number;
  /** Capacity of the timing runs. */
  readonly timingCapacity: number;
  /** Failed allocations in the first timed run. */
  readonly failures: number;
  /** High-water mark (bytes) of the first timed run. */
  readonly highWater: number;
  /** Smallest capacity without failure, or null; see `capacityStatus`. */
  readonly minCapacity: number | null;
  readonly capacityStatus: 'exact' | 'upper-bound' | 'none' | 'timeout' | 'skipped';
  /** minCapacity / peak live bytes. */
  readonly capacityRatio: number | null;
  readonly capacityProbes: number;
  /** Wall-clock time the cell took (warm-up, timing and capacity search), in ms. */
  readonly elapsedMs: number;
  /** Why a figure is missing or approximate. */
  readonly note?: string;
}

/** What `measureCell` needs besides the trace. */
export interface CellContext {
  readonly allocator: string;
  readonly workload: string;
  readonly factory: AllocatorFactory;
  readonly profile: WorkloadProfile;
  readonly timingCapacity: number;
  readonly maxCapacity: number;
  readonly timedFrom: number;
  readonly settings: BenchSettings;
  /** Whether to search the smallest capacity (a timing-only process leaves it to another). */
  readonly measureMemory: boolean;
  /** Called when the phase changes (progress display). */
  readonly onPhase?: (phase: string) => void;
}

/** Runs a full collection when the process was started with `--expose-gc`. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * Replays up to the end or the deadline; returns whether it reached the end. Slices double from
 * {@link MIN_SLICE} to {@link MAX_SLICE} while they stay short, so fast rows read the clock once per
 * 4096 events and slow rows overshoot their deadline by one short slice at most.
 */
function runUntil(replayer: Replayer, deadline: number): boolean {
  let slice = MIN_SLICE;
  while (!replayer.done) {
    const start = performance.now();
    replayer.run(replayer.position + slice);
    const now = performance.now();
    if (now > deadline) return replayer.done;
    if (slice < MAX_SLICE && now - start < SLICE_GROWTH_MS) slice *= 2;
  }
  return true;
}

/**
 * CPU time this process has used, in ns (user + system, microsecond resolution). A timed run is
 * charged its CPU time, not the wall clock: on a shared machine the time spent descheduled while
 * other work runs does not count, so ratios taken in one run stay comparable under load. Runs last
 * milliseconds at least, far above the resolution.
 */
export function cpuTimeNs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

/** The median of `values` (non-empty): the middle value, or the mean of the middle two. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Times and sizes one allocator on one trace. */
export function measureCell(trace: Trace, context: CellContext): CellResult {
  const { factory, profile, timingCapacity, settings, timedFrom } = context;
  const cellStart = performance.now();
  const fresh = (capacity: number) => factory(capacity, profile);

  // Starting over between runs: the same allocator, reset, when it has the contract's `reset` (every
  // allot row). A fresh instance per run would cost a JS row its optimised code in each timed run:
  // the compiler embeds objects it saw as constants, the garbage collection before a timed run frees
  // the previous instance's, and that invalidates the code, which the run then spends recompiling
  // (the caching pool measured about 1.5x its steady state that way). Otherwise a fresh allocator
  // when one is cheap to make; when construction is slow (state sized by capacity), the same
  // allocator with every live block freed (and a bump allocator rewound). Freeing everything is not
  // the default because a list-walking allocator frees in O(n) each.
  const constructionStart = performance.now();
  let allocator = fresh(timingCapacity);
  const reuse = performance.now() - constructionStart > REUSE_ABOVE_MS;
  const resettable = typeof allocator.reset === 'function';
  const replayer = new Replayer(trace, allocator);
  const rewind = (): void => {
    if (resettable) {
      allocator.reset!();
    } else if (reuse) {
      replayer.freeRemaining();
      allocator.rewind?.();
    } else {
      allocator = fresh(timingCapacity);
    }
    replayer.restart(allocator);
  };

  // Warm-up: whole replays, untimed, until the warm-up time is spent (at least one, itself bounded).
  context.onPhase?.('warm-up');
  const warmupEnd = performance.now() + settings.warmupMs;
  do {
    rewind();
    runUntil(replayer, warmupEnd);
  } while (performance.now() < warmupEnd);

  // Timed runs.
  context.onPhase?.('timing');
  const runs: number[] = [];
  const partialRuns: number[] = [];
  let timedEvents = Number.POSITIVE_INFINITY;
  let failures = 0;
  let highWater = 0;
  const perRunMs = settings.timingBudgetMs / settings.runs;
  for (let run = 0; run < settings.runs; run++) {
    rewind();
    replayer.run(timedFrom);
    collectGarbage();
    const start = performance.now();
    const cpuStart = cpuTimeNs();
    const finished = runUntil(replayer, start + perRunMs);
    const cpu = cpuTimeNs() - cpuStart;
    const events = replayer.position - timedFrom;
    if (events > 0) (finished ? runs : partialRuns).push(cpu / events);
    if (finished || timedEvents === Number.POSITIVE_INFINITY)
      timedEvents = Math.min(timedEvents, events);
    if (run === 0) {
      failures = replayer.failures;
      highWater = replayer.highWater;
    }
  }

  // The figure comes from the runs that reached the end; only when none did, from the partial ones.
  const partial = runs.length === 0;
  if (partial) runs.push(...partialRuns);

  // Memory: the smallest capacity without a failed allocation.
  let minCapacity: number | null = null;
  let capacityStatus: CellResult['capacityStatus'] = 'skipped';
  let capacityProbes = 0;
  let note: string | undefined;
  if (partial) {
    note = `timed runs stopped at their ${perRunMs.toFixed(0)} ms budget; capacity search skipped`;
  } else if (context.measureMemory) {
    context.onPhase?.('capacity search');
    const deadline = performance.now() + settings.capacityBudgetMs;
    const probeReplayer = new Replayer(trace, allocator, { stopOnFailure: true });
    const probe = (capacity: number): ProbeOutcome => {
      probeReplayer.restart(fresh(capacity));
      const finished = runUntil(probeReplayer, deadline);
      if (!finished) return 'timeout';
      return probeReplayer.failures === 0 ? 'fits' : 'fails';
    };
    const search = searchCapacity({
      peakLiveBytes: profile.peakLiveBytes,
      maxCapacity: context.maxCapacity,
      probe,
      deadline,
      relativePrecision: settings.capacityPrecision,
    });
    minCapacity = search.capacity;
    capacityStatus = search.status;
    capacityProbes = search.probes;
    if (search.status === 'upper-bound') note = 'capacity search ran out of time: upper bound';
    if (search.status === 'timeout') note = 'capacity search ran out of time before any fit';
    if (search.status === 'none') note = `no capacity up to ${context.maxCapacity} B fits`;
  }

  return {
    allocator: context.allocator,
    workload: context.workload,
    nsPerOp: runs.length > 0 ? median(runs) : null,
    runs,
    partial,
    timedEvents: Number.isFinite(timedEvents) ? timedEvents : 0,
    timingCapacity,
    failures,
    highWater,
    minCapacity,
    capacityStatus,
    capacityRatio: minCapacity === null ? null : minCapacity / profile.peakLiveBytes,
    capacityProbes,
    elapsedMs: performance.now() - cellStart,
    ...(note ? { note } : {}),
  };
}
