/**
 * Runs workloads through rows and collects everything the tables, `--json`, `results.json` and the
 * HTML report show.
 */
import { summarizeTrace, type Trace, type TrainingBudget } from '@allot/workloads';
import { measureRow, type RowResult } from './measure';
import { type LabRow, profileOf } from './registry';

/** PyTorch's own figures recorded in a trace file, set beside a replay's. */
export interface TorchFigures {
  /** Peak reserved bytes PyTorch reported (profiler `Total Reserved`) or its segments summed to. */
  readonly peakReservedBytes?: number;
  readonly peakAllocatedBytes?: number;
  readonly reservedAtEndBytes?: number;
  readonly segmentAllocs?: number;
  readonly segmentFrees?: number;
  readonly ooms?: number;
  readonly allocConf?: string;
}

/** One workload (built-in or a trace of a file) and every row's figures on it. */
export interface WorkloadResult {
  readonly id: string;
  readonly title: string;
  readonly description: string;
  readonly events: number;
  readonly allocs: number;
  readonly frees: number;
  readonly peakLiveBytes: number;
  readonly peakLiveBlocks: number;
  readonly maxSize: number;
  readonly meta: Readonly<Record<string, string | number | boolean>>;
  readonly budget?: TrainingBudget;
  readonly torch?: TorchFigures;
  readonly rows: RowResult[];
}

/** A figure the project holds itself to, checked on this run. */
export interface TargetResult {
  readonly name: string;
  readonly value: number;
  readonly display: string;
  readonly goal: string;
  readonly met: boolean;
}

/** Everything one invocation measured. */
export interface LabResults {
  readonly tool: 'allot-lab';
  readonly version: 1;
  readonly command: string;
  readonly createdAt: string;
  readonly node: string;
  readonly platform: string;
  readonly seed: number | null;
  /** `--capacity` in bytes, or null (ranges 4 × peak live, pools unlimited). */
  readonly capacity: number | null;
  readonly workloads: WorkloadResult[];
  readonly targets: TargetResult[];
  /** Allocations that failed, over every workload and row. */
  readonly failures: number;
}

/** A workload to run. */
export interface WorkloadInput {
  readonly id: string;
  readonly title: string;
  readonly description: string;
  readonly trace: Trace;
  readonly budget?: TrainingBudget;
}

/** Called after each cell with the number done, the total and the cell's label. */
export type Progress = (done: number, total: number, label: string) => void;

function torchFigures(meta: Trace['meta']): TorchFigures | undefined {
  if (meta.format !== 'torch-snapshot' && meta.format !== 'torch-profiler') return undefined;
  const n = (key: string) => (typeof meta[key] === 'number' ? (meta[key] as number) : undefined);
  const figures: Record<string, unknown> = {
    peakReservedBytes: n('torchPeakReservedBytes'),
    peakAllocatedBytes: n('torchPeakAllocatedBytes'),
    reservedAtEndBytes: n('torchReservedAtEndBytes'),
    segmentAllocs: n('torchSegmentAllocs'),
    segmentFrees: n('torchSegmentFrees'),
    ooms: n('torchOoms'),
    allocConf: typeof meta.torchAllocConf === 'string' ? meta.torchAllocConf : undefined,
  };
  for (const key of Object.keys(figures)) if (figures[key] === undefined) delete figures[key];
  return figures as TorchFigures;
}

/** Measures every row on every workload. */
export function runWorkloads(
  inputs: readonly WorkloadInput[],
  rows: readonly LabRow[],
  capacity: number | null,
  progress?: Progress,
): WorkloadResult[] {
  const total = inputs.length * rows.length;
  let done = 0;
  return inputs.map((input) => {
    const { trace } = input;
    const summary = summarizeTrace(trace);
    const profile = profileOf(trace);
    const results: RowResult[] = [];
    for (const row of rows) {
      progress?.(done, total, `${input.id} × ${row.name}`);
      results.push(measureRow(trace, row, profile, capacity));
      done++;
    }
    progress?.(done, total, input.id);
    const torch = torchFigures(trace.meta);
    return {
      id: input.id,
      title: input.title,
      description: input.description,
      events: summary.events,
      allocs: summary.allocs,
      frees: summary.frees,
      peakLiveBytes: summary.peakLiveBytes,
      peakLiveBlocks: summary.peakLiveBlocks,
      maxSize: summary.maxSize,
      meta: trace.meta,
      ...(input.budget ? { budget: input.budget } : {}),
      ...(torch ? { torch } : {}),
      rows: results,
    };
  });
}

/** The two targets, on the training workload (empty when it did not run). */
export function checkTargets(workloads: readonly WorkloadResult[]): TargetResult[] {
  const training = workloads.find((workload) => workload.id === 'training');
  if (!training) return [];
  const targets: TargetResult[] = [];
  const best = training.rows.find((row) => row.allocator === 'best-fit');
  if (best && Number.isFinite(best.eventsPerSecond)) {
    targets.push({
      name: 'replay speed, best-fit on the training workload',
      value: best.eventsPerSecond,
      display: `${(best.eventsPerSecond / 1e6).toFixed(2)} M events/s`,
      goal: '≥ 1,000,000 events/s',
      met: best.eventsPerSecond >= 1e6,
    });
  }
  const succeeded = training.rows.filter((row) => row.failures === 0 && Number.isFinite(row.ratio));
  if (succeeded.length > 0) {
    const winner = succeeded.reduce((a, b) => (b.ratio < a.ratio ? b : a));
    targets.push({
      name: 'best allocator on the training workload, peak reserved / peak live',
      value: winner.ratio,
      display: `${winner.ratio.toFixed(3)}× (${winner.allocator})`,
      goal: '≤ 1.10×',
      met: winner.ratio <= 1.1,
    });
  }
  return targets;
}

/** Total failed allocations. */
export function countFailures(workloads: readonly WorkloadResult[]): number {
  let failures = 0;
  for (const workload of workloads) for (const row of workload.rows) failures += row.failures;
  return failures;
}

/** The results without time series and layouts: what `--json` prints. */
export function summaryOf(results: LabResults): unknown {
  return {
    ...results,
    workloads: results.workloads.map((workload) => ({
      ...workload,
      rows: workload.rows.map(({ series: _series, layoutAtPeak: _layout, ...row }) => row),
    })),
  };
}
