/**
 * The optional interface through which a pool (such as `@allot/caching`) feeds `@allot/stats` what
 * only it knows: figures split by PyTorch's small and large pools, reserved bytes and segments,
 * retries, and segment events for the trace.
 *
 * Nothing here is required. `withStats` walks the `upstream` chain of the allocator it wraps and
 * uses the first allocator that implements {@link PoolStatsSource}; without one, `memoryStats()`
 * fills the `all` entries from the adaptor's own counters and the allocator's usage and layout.
 */
import type { Allocator, LayoutBlock, LayoutSegment } from '@allot/core';
import type { PickleValue } from '@allot/pickle';
import type { Counter } from './counters';

/** PyTorch's pool split. */
export type PoolName = 'small_pool' | 'large_pool';

/** Stat families of `torch.cuda.memory_stats()`, each reported as `<family>.<pool>.<figure>`. */
export type StatFamily =
  | 'allocated_bytes'
  | 'reserved_bytes'
  | 'active_bytes'
  | 'inactive_split_bytes'
  | 'requested_bytes'
  | 'allocation'
  | 'segment'
  | 'active'
  | 'inactive_split';

/** Figures of one pool; a family left out is filled from the adaptor's own view (for `all`) or 0. */
export type PoolFigures = Readonly<Partial<Record<StatFamily, Counter>>>;

/** What a pool reports when asked; every field is optional. */
export interface PoolStatsReport {
  /** Figures for `all`, `small_pool` and `large_pool`. */
  readonly pools: Readonly<Partial<Record<'all' | PoolName, PoolFigures>>>;
  /** Allocations that failed once, released cached memory, and were retried. */
  readonly numAllocRetries?: number;
  /** Allocations that failed for good (out-of-memory errors). */
  readonly numOoms?: number;
  readonly numSyncAllStreams?: number;
  /** Segments obtained from the memory source. */
  readonly numDeviceAlloc?: number;
  /** Segments given back to the memory source. */
  readonly numDeviceFree?: number;
  /** Largest block that may be split, in bytes; -1 for no limit (PyTorch's convention). */
  readonly maxSplitSize?: number;
  readonly oversizeAllocations?: Counter;
  readonly oversizeSegments?: Counter;
  /**
   * Exported as the snapshot's `allocator_settings` (PyTorch's keys, for example `max_split_size`).
   * Plain values suffice: `garbage_collection_threshold` is written as a Python float on export.
   */
  readonly allocatorSettings?: Readonly<Record<string, PickleValue>>;
}

/** Receives a pool's events; `withStats` hands one to the pool and records them in its trace. */
export interface StatsSink {
  /** A segment of `size` bytes at `address` was obtained from the memory source. */
  segmentAlloc(address: number, size: number, stream?: number): void;
  /** A segment was given back to the memory source. */
  segmentFree(address: number, size: number, stream?: number): void;
  /** A block whose free was requested earlier (deferred by stream use) is now reusable. */
  freeCompleted(address: number, size: number, stream?: number): void;
}

/** Implemented by pools that know more than {@link Allocator.usage} says. */
export interface PoolStatsSource {
  /** Current figures. Called by `memoryStats()`, `memorySummary()` and the metrics collectors. */
  poolStats(): PoolStatsReport;
  /**
   * Connects a sink; the pool calls it on segment events until the returned function is called.
   * `withStats` attaches one when it is created.
   */
  attachStatsSink?(sink: StatsSink): () => void;
  /**
   * Whether frees may be deferred: then `withStats` records only `free_requested` and the pool
   * reports `freeCompleted` itself. @defaultValue false
   */
  readonly defersFrees?: boolean;
}

/** A layout block with what a pool may add: a free that waits for a stream, the stream. */
export interface PoolLayoutBlock extends LayoutBlock {
  /** Freed by the caller but not yet reusable (PyTorch's `active_pending_free`). */
  readonly pendingFree?: boolean;
}

/** A layout segment with what a pool may add. */
export interface PoolLayoutSegment extends LayoutSegment {
  readonly blocks: readonly PoolLayoutBlock[];
  /** Stream the segment belongs to. @defaultValue 0 */
  readonly stream?: number;
  /** Whether the segment grows in place (expandable segments). @defaultValue false */
  readonly expandable?: boolean;
}

/** Whether `value` implements {@link PoolStatsSource}. */
export function isPoolStatsSource(value: unknown): value is PoolStatsSource {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { poolStats?: unknown }).poolStats === 'function'
  );
}

/** The outermost allocator in the `upstream` chain of `allocator` (itself included) that is a pool source. */
export function findPoolStatsSource(allocator: Allocator): PoolStatsSource | undefined {
  const seen = new Set<unknown>();
  let current: unknown = allocator;
  while (typeof current === 'object' && current !== null && !seen.has(current)) {
    if (isPoolStatsSource(current)) return current;
    seen.add(current);
    current = (current as { upstream?: unknown }).upstream;
  }
  return undefined;
}
