/**
 * How a row's whole replays are timed for its ns/event (`measure.ts` replays, this decides how
 * often and which times count).
 *
 * ```
 *  warm-up  replays, untimed, until WARMUP_EVENTS events have been replayed (the sampled pass
 *           counts) and two replays in a row are no faster than the fastest before them; none
 *           past MAX_WARMUP_MS of the clock (resets included) once three have run: no figure
 *           then, and why
 *  timed    replays until ≥ MIN_TIMED_RUNS and ≥ MIN_TIMED_MS ms, or runs of STEADY_RUN_MS each;
 *           at most MAX_TIMED_RUNS, none started past MAX_TIMED_MS of the clock: the median
 * ```
 *
 * The first replays of a row in a process run before V8 has compiled the allocator's code and the
 * replay loop: on a recording of a few thousand events they take 20 to 70 times longer than once
 * compiled, and each lasts longer than a steady run, so timing them gave a small recording
 * 30,000 ns/event where it takes 50. A warm-up by events replayed, not by runs, compiles them
 * whatever the recording's length; a recording so short that its replays cost more in resets than
 * in events does not get there within MAX_WARMUP_MS, and gets no figure rather than a cold one.
 */

/** Timed runs: at least this many… */
export const MIN_TIMED_RUNS = 3;
/** …and at least this long in total, in ms (short traces are replayed more often). */
export const MIN_TIMED_MS = 150;
/**
 * A run this long (ms) is steady enough that {@link MIN_TIMED_RUNS} of them time a row, however
 * short their total (a snapshot of 100,000 events replays in about 15 ms).
 */
export const STEADY_RUN_MS = 10;
/** Timed runs at most. */
export const MAX_TIMED_RUNS = 25;
/** No new timed run starts after this many ms of the clock (long traces time once or twice). */
export const MAX_TIMED_MS = 2000;
/** Events replayed before timing (V8 compiles a hot function after some thousands of calls). */
export const WARMUP_EVENTS = 100_000;
/** The warm-up gives up after this many ms of the clock: no figure then. */
export const MAX_WARMUP_MS = 500;
/** A replay more than this much faster than the fastest before it shows the code still warming. */
export const WARMING = 1.25;

/** Why a row has no ns/event when its replays do not warm up within {@link MAX_WARMUP_MS}. */
export const NOT_WARM = `its replays did not run warm within ${MAX_WARMUP_MS} ms (a recording too short to time: each replay costs more to restart than to run, and the first run before V8 has compiled the code)`;

/** The median ms of one replay and how many were timed; or why there is no figure. */
export type ReplayTiming =
  | { readonly median: number; readonly runs: number }
  | { readonly median: null; readonly why: string };

/** Options of {@link timeReplays}. */
export interface ReplayTimingOptions {
  /** Events of one replay. */
  readonly events: number;
  /** Events replayed already (the sampled pass): they count towards the warm-up. */
  readonly warmEvents?: number;
  /** Events replayed before timing. @defaultValue WARMUP_EVENTS */
  readonly warmupEvents?: number;
  /** The clock the budgets are kept by, in ms (resets and all). @defaultValue performance.now */
  readonly now?: () => number;
}

/** Times `runOnce` (one whole replay; it returns the ms of the replay alone), as the module says. */
export function timeReplays(runOnce: () => number, options: ReplayTimingOptions): ReplayTiming {
  const now = options.now ?? (() => performance.now());
  const warmupStart = now();
  const target = options.warmupEvents ?? WARMUP_EVENTS;
  let replayed = options.warmEvents ?? 0;
  let replays = 0;
  let fastest = Number.POSITIVE_INFINITY;
  let settled = 0;
  // Warm-up: two replays in a row no faster than the fastest before them (V8 compiles on a thread
  // of its own, which a busy machine delays), over WARMUP_EVENTS at least; three replays at least
  // before giving up, however long each.
  while (settled < 2 || replayed < target) {
    if (replays >= 3 && now() - warmupStart > MAX_WARMUP_MS) return { median: null, why: NOT_WARM };
    const ms = runOnce();
    replays++;
    replayed += options.events;
    settled = ms * WARMING < fastest ? 0 : settled + 1;
    fastest = Math.min(fastest, ms);
  }
  const times: number[] = [];
  const timedStart = now();
  let total = 0;
  const enough = () =>
    times.length >= MIN_TIMED_RUNS &&
    (total >= MIN_TIMED_MS || total >= STEADY_RUN_MS * times.length);
  while (
    times.length < MAX_TIMED_RUNS &&
    (times.length === 0 || (now() - timedStart < MAX_TIMED_MS && !enough()))
  ) {
    const ms = runOnce();
    times.push(ms);
    total += ms;
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, runs: times.length };
}
