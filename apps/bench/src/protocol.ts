/** Messages between the bench's parent process and its per-allocator worker processes (IPC). */
import type { CellResult } from './measure';
import type { RawWorkload } from './raw-plan';
import type { BenchSettings } from './settings';
import type { WorkloadSpec } from './workload-plan';

/** Parent → worker: measure one allocator on these workloads, then exit. */
export interface RunRequest {
  readonly type: 'run';
  readonly allocator: string;
  readonly workloads: readonly WorkloadSpec[];
  readonly settings: BenchSettings;
  /** Whether to search each cell's smallest capacity (the first process of a row only). */
  readonly measureMemory: boolean;
}

/** Worker → parent. */
export type WorkerMessage =
  | { readonly type: 'phase'; readonly workload: string; readonly phase: string }
  | { readonly type: 'result'; readonly result: CellResult }
  | { readonly type: 'skipped'; readonly workload: string; readonly reason: string }
  | { readonly type: 'error'; readonly workload: string | null; readonly message: string }
  | { readonly type: 'done' };

/** Parent → raw worker: time one row on one raw workload, then exit. */
export interface RawRequest {
  readonly type: 'raw';
  readonly allocator: string;
  readonly workload: RawWorkload;
  /** Seed of the random workloads' plans. */
  readonly seed: number;
}

/** What a raw worker measured: the timed part of one row on one raw workload. */
export interface RawMeasurement {
  readonly allocator: string;
  readonly workload: string;
  /** CPU time of the process over the timed calls (user + system), in ns. */
  readonly cpuNs: number;
  /** Wall-clock time over the same calls, in ns. */
  readonly wallNs: number;
  /** Calls timed: allocations and frees. */
  readonly calls: number;
  /** Allocations that returned null in the timed part (and the fill before it). */
  readonly failures: number;
  /** Bytes the row managed. */
  readonly capacity: number;
}

/** Raw worker → parent. */
export type RawMessage =
  | { readonly type: 'result'; readonly result: RawMeasurement }
  | { readonly type: 'error'; readonly message: string }
  | { readonly type: 'done' };
