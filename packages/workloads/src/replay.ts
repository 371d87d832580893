/**
 * Replays a {@link Trace} through an allocator: the one replay loop of allot, used by the lab and
 * the benchmarks alike.
 *
 * The loop reads the trace's typed arrays and keeps each block's address in a `Float64Array`
 * indexed by block id, so a replay allocates nothing per event (addresses are exact up to 2^53).
 * An allocation that returns `null` counts as a failure and its block is treated as never live: its
 * free is skipped. Peak live bytes count successful requests only; the high-water mark is the largest
 * `address + size − base` seen, the memory a contiguous range must offer for this run. An allocation
 * on a stream other than 0 goes to `target.allocateOn(stream, size)` when the trace has streams and
 * the target has that call.
 *
 * Why the loop is compiled per {@link Replayer}: a loop shared by several allocators in one process
 * (the lab replays every row in one) would see each allocator's `allocate` and `free` at its two call
 * sites, megamorphic calls that V8 cannot inline, and every allocator would look slower than it is in
 * an application that uses one. `new Function` gives each replayer a copy of the loop with call
 * sites of its own; a process that replays one allocator (a benchmark worker) pays one compilation.
 *
 * {@link Replayer} runs the loop in slices (`run(to)`), so a caller can time a steady state, check a
 * deadline between slices, or sample figures over time; {@link replay} is the one-call form.
 */
import { EventKind, type Trace } from './trace';

/** What the loop drives: the core contract's two calls, and stream-ordered allocation when present. */
export interface ReplayTarget {
  allocate(size: number, alignment?: number): number | null;
  free(address: number): void;
  /** Allocation on a stream (a caching pool's); used for the trace's events on streams other than 0. */
  allocateOn?(stream: number, size: number, alignment?: number): number | null;
  /**
   * Gives back cached memory, as little as covers `bytes` (a caching pool's `release`): called at the
   * trace's {@link Trace.releases}, where the recorded allocator gave segments back.
   */
  release?(bytes: number): number;
}

/** Options of {@link replay} and {@link Replayer}. */
export interface ReplayOptions {
  /** Lowest address the allocator hands out, for the high-water mark. @defaultValue 0 */
  readonly base?: number;
  /** Stop at the first failed allocation (capacity searches use this). @defaultValue false */
  readonly stopOnFailure?: boolean;
}

/** Figures of one replay. */
export interface ReplayResult {
  /** Events processed (fewer than the trace's length when stopped early). */
  readonly events: number;
  /** Successful allocations. */
  readonly allocations: number;
  /** Frees performed (frees of failed blocks are skipped and not counted). */
  readonly frees: number;
  /** Allocations that returned `null`. */
  readonly failures: number;
  /** Index of the first failed event, or -1. */
  readonly firstFailure: number;
  /** Largest sum of live requested bytes (successful blocks only). */
  readonly peakLiveBytes: number;
  /** Largest `address + size − base` over every successful block. */
  readonly highWater: number;
  /** Blocks live when the replay ended. */
  readonly liveBlocks: number;
  /** Bytes live when the replay ended. */
  readonly liveBytes: number;
}

/** Marks a block that is not live in {@link Replayer.addresses}. */
export const NOT_LIVE = -1;

/** The loop: runs events `[state.position, to)` of `trace` through `target`; returns events processed. */
type ReplayLoop = (trace: Trace, target: ReplayTarget, state: Replayer, to: number) => number;

// Locals hold the figures while the loop runs; the state gets them back when it stops.
const LOOP_SOURCE = `
const kind = trace.kind, id = trace.id, size = trace.size, alignment = trace.alignment;
const streams = target.allocateOn === undefined ? undefined : trace.stream;
const addresses = state.addresses;
const base = state.base;
const stopOnFailure = state.stopOnFailure;
const end = to < trace.length ? to : trace.length;
let live = state.liveBytes, peak = state.peakLiveBytes, windowPeak = state.windowPeakLiveBytes;
let high = state.highWater, allocations = state.allocations, frees = state.frees;
let liveBlocks = state.liveBlocks;
const start = state.position;
let i = start;
for (; i < end; i++) {
  const block = id[i];
  if (kind[i] === ${EventKind.Alloc}) {
    const bytes = size[i];
    const align = alignment[i];
    const stream = streams === undefined ? 0 : streams[i];
    let address;
    if (stream !== 0) {
      address = align === 0 ? target.allocateOn(stream, bytes) : target.allocateOn(stream, bytes, align);
    } else {
      address = align === 0 ? target.allocate(bytes) : target.allocate(bytes, align);
    }
    if (address === null) {
      state.failures++;
      if (state.firstFailure < 0) state.firstFailure = i;
      if (stopOnFailure) {
        i++;
        break;
      }
      continue;
    }
    addresses[block] = address;
    allocations++;
    liveBlocks++;
    live += bytes;
    if (live > windowPeak) {
      windowPeak = live;
      if (live > peak) peak = live;
    }
    const top = address + bytes - base;
    if (top > high) high = top;
  } else {
    const address = addresses[block];
    if (address === ${NOT_LIVE}) continue;
    target.free(address);
    addresses[block] = ${NOT_LIVE};
    frees++;
    liveBlocks--;
    live -= size[i];
  }
}
state.liveBytes = live;
state.peakLiveBytes = peak;
state.windowPeakLiveBytes = windowPeak;
state.highWater = high;
state.allocations = allocations;
state.frees = frees;
state.liveBlocks = liveBlocks;
state.position = i;
return i - start;
`;

/**
 * A resumable replay of one trace through one allocator. Its figures are public and writable, so a
 * caller that seeds the allocator with state recorded before the trace (a caching pool restoring a
 * snapshot's starting segments) can set `addresses`, `liveBytes` and `position` to match.
 */
export class Replayer {
  /** Next event to process. */
  position = 0;
  allocations = 0;
  frees = 0;
  failures = 0;
  /** Index of the first failed event, or -1. */
  firstFailure = -1;
  liveBytes = 0;
  liveBlocks = 0;
  peakLiveBytes = 0;
  /**
   * Largest live bytes since the caller last set this to `liveBytes`: the peak of a sampling window,
   * so a series sampled between slices does not miss the peaks inside them.
   */
  windowPeakLiveBytes = 0;
  /** Largest `address + size − base` of a successful block. */
  highWater = 0;
  /** Address of each block by id, {@link NOT_LIVE} when not live. */
  readonly addresses: Float64Array;
  readonly base: number;
  readonly stopOnFailure: boolean;
  private readonly loop: ReplayLoop;
  /**
   * Called before each of the trace's {@link Trace.releases} the target replays, with its index in
   * them; the replay is then at its event (`position`). A caller that looks at the allocator just
   * before it gives memory back sets this instead of replaying the trace again.
   */
  beforeRelease: ((index: number) => void) | undefined = undefined;
  /** Next of the trace's {@link Trace.releases} to replay. */
  private nextRelease = 0;

  constructor(
    readonly trace: Trace,
    private target: ReplayTarget,
    options: ReplayOptions = {},
  ) {
    this.addresses = new Float64Array(trace.allocCount).fill(NOT_LIVE);
    this.base = options.base ?? 0;
    this.stopOnFailure = options.stopOnFailure ?? false;
    this.loop = new Function('trace', 'target', 'state', 'to', LOOP_SOURCE) as ReplayLoop;
  }

  /** Whether every event has been processed, or the replay stopped at a failure. */
  get done(): boolean {
    return this.position >= this.trace.length || (this.stopOnFailure && this.failures > 0);
  }

  /**
   * Processes events from the current position up to (not including) `to`, or to the end; stops
   * after a failed allocation under `stopOnFailure`. Returns the number of events processed.
   */
  run(to: number = this.trace.length): number {
    if (this.stopOnFailure && this.failures > 0) return 0;
    const releases = this.trace.releases;
    if (releases === undefined || this.target.release === undefined) {
      return this.loop(this.trace, this.target, this, to);
    }
    // The recorded allocator gave segments back before some events: the target does the same there.
    let done = 0;
    const end = Math.min(to, this.trace.length);
    while (this.nextRelease < releases.event.length) {
      const at = releases.event[this.nextRelease]!;
      if (at >= end) break;
      if (at >= this.position) {
        done += this.loop(this.trace, this.target, this, at);
        if (this.position < at) return done; // stopped at a failure
        this.beforeRelease?.(this.nextRelease);
        this.target.release(releases.bytes[this.nextRelease]!);
      }
      this.nextRelease++;
    }
    return done + this.loop(this.trace, this.target, this, to);
  }

  /** Starts over from event 0 with `target` (a fresh allocator, or the same one after `reset()`). */
  restart(target: ReplayTarget = this.target): void {
    this.target = target;
    this.addresses.fill(NOT_LIVE);
    this.position = 0;
    this.nextRelease = 0;
    this.allocations = 0;
    this.frees = 0;
    this.failures = 0;
    this.firstFailure = -1;
    this.liveBytes = 0;
    this.liveBlocks = 0;
    this.peakLiveBytes = 0;
    this.windowPeakLiveBytes = 0;
    this.highWater = 0;
  }

  /**
   * Frees every block still live, in allocation order, without counting these frees as events
   * (useful to check that an allocator returns to its initial state).
   */
  freeRemaining(): void {
    const addresses = this.addresses;
    for (let block = 0; block < addresses.length; block++) {
      const address = addresses[block]!;
      if (address === NOT_LIVE) continue;
      this.target.free(address);
      addresses[block] = NOT_LIVE;
    }
    this.liveBlocks = 0;
    this.liveBytes = 0;
  }

  /** The figures so far. */
  result(): ReplayResult {
    return {
      events: this.position,
      allocations: this.allocations,
      frees: this.frees,
      failures: this.failures,
      firstFailure: this.firstFailure,
      peakLiveBytes: this.peakLiveBytes,
      highWater: this.highWater,
      liveBlocks: this.liveBlocks,
      liveBytes: this.liveBytes,
    };
  }
}

/**
 * Replays every event of `trace` through `allocator` and returns the figures. Blocks live at the end
 * of the trace stay allocated.
 *
 * @example
 * ```ts
 * const result = replay(randomMix({ liveBlocks: 5000 }), bestFit({ capacity: 2 ** 30 }));
 * console.log(result.failures, result.highWater / result.peakLiveBytes);
 * ```
 */
export function replay(
  trace: Trace,
  allocator: ReplayTarget,
  options?: ReplayOptions,
): ReplayResult {
  const replayer = new Replayer(trace, allocator, options);
  replayer.run();
  return replayer.result();
}
