/**
 * Replays a {@link Trace} through an allocator.
 *
 * The loop reads the trace's typed arrays and keeps each block's address in a `Float64Array`
 * indexed by block id, so a replay allocates nothing per event (addresses are exact up to 2^53).
 * An allocation that returns `null` counts as a failure and its block is treated as never live: its
 * free is skipped. Peak live bytes count successful requests only; the high-water mark is the largest
 * `address + size − base` seen, the memory a contiguous range must offer for this run.
 *
 * {@link Replayer} exposes the loop in slices (`run(from, to)`) so a benchmark can time a steady
 * state, check a deadline between slices, or sample figures over time; {@link replay} is the
 * one-call form.
 */
import type { Allocator } from '@allot/core';
import { EventKind, type Trace } from './trace';

/** What `replay` needs from an allocator: the two calls of the core contract it drives. */
export type ReplayTarget = Pick<Allocator, 'allocate' | 'free'>;

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

const NOT_LIVE = -1;

/** A resumable replay of one trace through one allocator. */
export class Replayer {
  /** Next event to process. */
  position = 0;
  allocations = 0;
  frees = 0;
  failures = 0;
  firstFailure = -1;
  liveBytes = 0;
  liveBlocks = 0;
  peakLiveBytes = 0;
  highWater = 0;
  private readonly addresses: Float64Array;
  private readonly base: number;
  private readonly stopOnFailure: boolean;

  constructor(
    readonly trace: Trace,
    private target: ReplayTarget,
    options: ReplayOptions = {},
  ) {
    this.addresses = new Float64Array(trace.allocCount).fill(NOT_LIVE);
    this.base = options.base ?? 0;
    this.stopOnFailure = options.stopOnFailure ?? false;
  }

  /** Whether every event has been processed, or the replay stopped at a failure. */
  get done(): boolean {
    return this.position >= this.trace.length || (this.stopOnFailure && this.failures > 0);
  }

  /**
   * Processes events from the current position up to (not including) `to`, or to the end.
   * Returns the number of events processed.
   */
  run(to: number = this.trace.length): number {
    const { kind, id, size, alignment } = this.trace;
    const end = Math.min(to, this.trace.length);
    const addresses = this.addresses;
    const target = this.target;
    const base = this.base;
    const start = this.position;
    let i = start;
    for (; i < end; i++) {
      const block = id[i]!;
      if (kind[i] === EventKind.Alloc) {
        const bytes = size[i]!;
        const align = alignment[i]!;
        const address = align === 0 ? target.allocate(bytes) : target.allocate(bytes, align);
        if (address === null) {
          this.failures++;
          if (this.firstFailure < 0) this.firstFailure = i;
          if (this.stopOnFailure) {
            i++;
            break;
          }
          continue;
        }
        addresses[block] = address;
        this.allocations++;
        this.liveBlocks++;
        const live = (this.liveBytes += bytes);
        if (live > this.peakLiveBytes) this.peakLiveBytes = live;
        const top = address + bytes - base;
        if (top > this.highWater) this.highWater = top;
      } else {
        const address = addresses[block]!;
        if (address === NOT_LIVE) continue;
        target.free(address);
        addresses[block] = NOT_LIVE;
        this.frees++;
        this.liveBlocks--;
        this.liveBytes -= size[i]!;
      }
    }
    this.position = i;
    return i - start;
  }

  /** Starts over from event 0 with `target` (a fresh allocator, or the same one after `reset()`). */
  restart(target: ReplayTarget = this.target): void {
    this.target = target;
    this.addresses.fill(NOT_LIVE);
    this.position = 0;
    this.allocations = 0;
    this.frees = 0;
    this.failures = 0;
    this.firstFailure = -1;
    this.liveBytes = 0;
    this.liveBlocks = 0;
    this.peakLiveBytes = 0;
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
