/**
 * How a row's whole replays are timed for its ns/event (`measure.ts` replays, this decides how
 * often and which times count).
 *
 * ```
 *  warm-up  replays, untimed, until WARMUP_EVENTS events have been replayed (the sampled pass
 *           counts) and two batches in a row are no faster than the fastest before them, or
 *           MAX_WARMUP_MS
 *  timed    batches of replays, each lasting at least MIN_BATCH_MS (a replay shorter than the
 *           clock's grain is timed many at once), until MIN_TIMED_RUNS batches and MIN_TIMED_MS
 *           ms, or batches of STEADY_RUN_MS each; at most MAX_TIMED_RUNS, none started past
 *           MAX_TIMED_MS: the median batch, per replay
 * ```
 *
 * The first replays of a row in a process run before V8 has compiled the allocator's code and the
 * replay loop: on a recording of a few thousand events they take 20 to 70 times longer than once
 * compiled, and each lasts longer than a steady run, so timing them gave a small recording
 * 30,000 ns/event where it takes 50. A warm-up by events replayed, not by runs, compiles them
 * whatever the recording's length.
 */

/** Timed batches: at least this many… */
export const MIN_TIMED_RUNS = 3;
/** …and at least this long in total, in ms (short traces are replayed more often). */
export const MIN_TIMED_MS = 150;
/**
 * A batch this long (ms) is steady enough that {@link MIN_TIMED_RUNS} of them time a row, however
 * short their total (a snapshot of 100,000 events replays in about 15 ms).
 */
export const STEADY_RUN_MS = 10;
/** Timed batches at most. */
export const MAX_TIMED_RUNS = 25;
/** No new timed batch starts after this many ms of timed batches (long traces time once or twice). */
export const MAX_TIMED_MS = 2000;
/** Events replayed before timing (V8 compiles a hot function after some thousands of calls). */
export const WARMUP_EVENTS = 100_000;
/** The warm-up stops after this many ms, compiled or not. */
export const MAX_WARMUP_MS = 1000;
/** A batch more than this much faster than the one before shows the code still warming up. */
export const WARMING = 1.25;
/** A timed batch lasts at least this long (ms): shorter replays are timed several at once. */
export const MIN_BATCH_MS = 1;

/** The median ms of one replay, and how many replays were timed. */
export interface ReplayTiming {
  readonly median: number;
  readonly runs: number;
}

/** Options of {@link timeReplays}. */
export interface ReplayTimingOptions {
  /** Events of one replay. */
  readonly events: number;
  /** Events replayed already (the sampled pass): they count towards the warm-up. */
  readonly warmEvents?: number;
  /** Events replayed before timing. @defaultValue WARMUP_EVENTS */
  readonly warmupEvents?: number;
}

/** Replays in a batch that lasts at least {@link MIN_BATCH_MS}, when one takes `ms`. */
function batchSize(ms: number): number {
  return Math.min(1e6, Math.max(1, Math.ceil(MIN_BATCH_MS / Math.max(ms, 1e-6))));
}

/** Times `runOnce` (one whole replay; it returns its ms) as the module comment says. */
export function timeReplays(runOnce: () => number, options: ReplayTimingOptions): ReplayTiming {
  const events = Math.max(1, options.events);
  const batch = (count: number) => {
    let ms = 0;
    for (let i = 0; i < count; i++) ms += runOnce();
    return ms;
  };
  // Warm-up: until WARMUP_EVENTS, and two batches in a row no faster than the fastest before them
  // (V8 compiles on a thread of its own, which a busy machine delays).
  let replayed = options.warmEvents ?? 0;
  let spent = 0;
  let fastest = Number.POSITIVE_INFINITY;
  let settled = 0;
  let size = 1;
  while (spent < MAX_WARMUP_MS) {
    const ms = batch(size);
    spent += ms;
    replayed += size * events;
    const each = ms / size;
    settled = each * WARMING < fastest ? 0 : settled + 1;
    fastest = Math.min(fastest, each);
    size = batchSize(fastest);
    if (settled >= 2 && replayed >= (options.warmupEvents ?? WARMUP_EVENTS)) break;
  }
  // Timed batches.
  const times: number[] = [];
  let runs = 0;
  let total = 0;
  const enough = () =>
    times.length >= MIN_TIMED_RUNS &&
    (total >= MIN_TIMED_MS || total >= STEADY_RUN_MS * times.length);
  while (
    times.length < MAX_TIMED_RUNS &&
    (times.length === 0 || (total < MAX_TIMED_MS && !enough()))
  ) {
    const ms = batch(size);
    times.push(ms / size);
    runs += size;
    total += ms;
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, runs };
}
