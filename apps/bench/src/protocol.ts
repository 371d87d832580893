/** Messages between the bench's parent process and its per-allocator worker processes (IPC). */
import type { CellResult } from './measure';
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
