/** The results of a bench run: what the CLI prints, writes as JSON, and renders into BENCHMARKS.md. */
import type { TraceSummary } from '@allot/workloads';
import type { CellResult } from './measure';
import type { BenchSettings } from './settings';
import type { WorkloadSpec } from './workload-plan';

export interface WorkloadRecord {
  readonly id: string;
  readonly title: string;
  readonly kind: WorkloadSpec['kind'];
  readonly summary: TraceSummary;
  /** First timed event (the steady state). */
  readonly timedFrom: number;
}

export interface AllocatorRecord {
  readonly name: string;
  readonly recipe: string;
  readonly peer: boolean;
  readonly status: 'measured' | 'unavailable';
  readonly reason?: string;
}

/** Where and how a run was made: the command, the day, Node, the machine. */
export interface RunInfo {
  readonly command: string;
  readonly date: string;
  readonly node: string;
  readonly cpu: string;
  readonly cores: number;
  readonly platform: string;
}

export interface BenchRun extends RunInfo {
  readonly settings: BenchSettings;
  readonly durationSeconds: number;
  readonly workloads: WorkloadRecord[];
  readonly allocators: AllocatorRecord[];
  readonly cells: CellResult[];
  readonly skipped: { allocator: string; workload: string; reason: string }[];
  readonly errors: { allocator: string; workload: string | null; message: string }[];
  readonly notes: string[];
}

/** The cell of `allocator` on `workload`, if measured. */
export function cellOf(run: BenchRun, allocator: string, workload: string): CellResult | undefined {
  return run.cells.find((cell) => cell.allocator === allocator && cell.workload === workload);
}
