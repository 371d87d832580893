/**
 * A snapshot: every segment and block of an allocator at one moment (from its layout walk), with
 * the trace recorded so far and the counters. The exporters (`toTorchSnapshot`, `toVmaDump`) turn
 * it into files other tools open.
 */
import type { Usage } from '@allot/core';
import type { PickleValue } from '@allot/pickle';
import type { Counters } from './counters';
import type { TraceEvent } from './trace-buffer';

/** State of a block, in PyTorch's words. */
export type BlockState = 'active_allocated' | 'active_pending_free' | 'inactive';

export interface SnapshotBlock {
  readonly address: number;
  /** Bytes the block spans (its usable size when live). */
  readonly size: number;
  /** Bytes the caller asked for (0 for a free block). */
  readonly requestedSize: number;
  readonly state: BlockState;
  /** Stack trace of the allocation, when stacks were recorded. */
  readonly stack?: string;
}

export interface SnapshotSegment {
  readonly address: number;
  /** Bytes the segment spans. */
  readonly size: number;
  /** Pool the segment belongs to (for example `small`, `large`). */
  readonly pool?: string;
  readonly stream: number;
  readonly expandable: boolean;
  /** Blocks in address order. */
  readonly blocks: readonly SnapshotBlock[];
}

export interface MemorySnapshot {
  /** When it was taken, in milliseconds since the Unix epoch. */
  readonly time: number;
  /** Device index written into exports. */
  readonly device: number;
  readonly segments: readonly SnapshotSegment[];
  /** Recorded events, oldest first (empty when tracing was off). */
  readonly trace: readonly TraceEvent[];
  /** Counters over the whole lifetime. */
  readonly counters: Counters;
  readonly usage: Usage;
  /** A pool's settings, exported as `allocator_settings`. */
  readonly allocatorSettings?: Readonly<Record<string, PickleValue>>;
}
