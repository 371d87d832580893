/**
 * One allocator built for one trace, as the lab's loops drive it: the row's instance, what a pool
 * decided, and {@link beginReplay}, which seeds a fresh loop state (a pool restores the trace's
 * starting state there).
 */
import type { Layout } from '@allot/core';
import type { Trace } from '@allot/workloads';
import { type LoopState, type LoopTarget, newLoopState } from './replay-loop';

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
  readonly target: LoopTarget;
  /** Blocks and segments now; ranges clip it at their high-water mark. */
  layout(state: LoopState): Layout;
  /** Reserved bytes now (the high-water mark so far, for ranges). */
  reserved(state: LoopState): number;
  /** Largest reserved bytes so far. */
  peakReserved(state: LoopState): number;
  /** Segment decisions of a pool. */
  segments?(): SegmentDecisions;
  /** Back to the initial state, for the next timed run. */
  reset(): void;
  /**
   * Seeds a fresh loop state before a replay (a pool restores the trace's starting state and
   * skips its leading events); use {@link beginReplay}.
   */
  begin?(state: LoopState): void;
  /** What the instance chose for this trace (a tuned setting), shown beside its name. */
  readonly note?: string;
  /** A caching pool's canonical `PYTORCH_CUDA_ALLOC_CONF`. */
  readonly config?: string;
}

/** A fresh loop state for `instance` on `trace`, past any starting state the instance restored. */
export function beginReplay(instance: RowInstance, trace: Trace): LoopState {
  const state = newLoopState(trace);
  instance.begin?.(state);
  return state;
}
