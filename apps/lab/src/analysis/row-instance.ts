/**
 * One allocator built for one trace, as the lab drives it with @allot/workloads' replay loop: the
 * row's instance, what a pool decided, and {@link beginReplay}, which seeds a replayer (a pool
 * restores the trace's starting state there).
 */
import type { Layout } from '@allot/core';
import { Replayer, type ReplayOptions, type ReplayTarget, type Trace } from '@allot/workloads';

/** PyTorch's cudaMalloc decisions as a pool over an address-only source made them. */
export interface SegmentDecisions {
  /** Segments acquired (cudaMalloc calls). */
  readonly acquired: number;
  /** Segments released (cudaFree calls). */
  readonly released: number;
  /** Expandable segments grown in place. */
  readonly grown: number;
  /** Segments restored from the trace's starting state (not counted in `acquired`). */
  readonly restored?: number;
  /** Bytes of each decision in the replay, in order (acquisitions and growths). */
  readonly sizes?: readonly number[];
}

/** One allocator built for one trace. */
export interface RowInstance {
  readonly target: ReplayTarget;
  /** Blocks and segments now; ranges clip it at their high-water mark. */
  layout(state: Replayer): Layout;
  /**
   * `fragmentation(layout(state)).externalFragmentation`, without building the layout (pools):
   * what the sampled pass reads at each sample.
   */
  externalFragmentation?(state: Replayer): number;
  /** Reserved bytes now (the high-water mark so far, for ranges). */
  reserved(state: Replayer): number;
  /** Largest reserved bytes so far. */
  peakReserved(state: Replayer): number;
  /** Segment decisions of a pool. */
  segments?(): SegmentDecisions;
  /** Back to the initial state, for the next timed run. */
  reset(): void;
  /**
   * Seeds a fresh replayer before a replay (a pool restores the trace's starting state and skips
   * its leading events); use {@link beginReplay}.
   */
  begin?(state: Replayer): void;
  /** What the instance chose for this trace (a tuned setting), shown beside its name. */
  readonly note?: string;
  /** A caching pool's canonical `PYTORCH_CUDA_ALLOC_CONF`. */
  readonly config?: string;
}

/**
 * A replayer of `trace` through `instance`, past any starting state the instance restored. Passing
 * the replayer of an earlier run on the same trace (`reuse`) restarts it instead: its loop is already
 * compiled and warm, which timed and repeated runs want.
 */
export function beginReplay(
  instance: RowInstance,
  trace: Trace,
  reuse?: Replayer,
  options?: ReplayOptions,
): Replayer {
  let replayer: Replayer;
  if (reuse === undefined) {
    replayer = new Replayer(trace, instance.target, options);
  } else {
    replayer = reuse;
    replayer.restart(instance.target);
  }
  instance.begin?.(replayer);
  return replayer;
}
