/**
 * Runs workloads through rows and collects everything the tables, `--json`, `results.json` and the
 * HTML report show.
 */
import { parseAllocConf } from '@allot/caching';
import {
  type RecordedSegment,
  summarizeTrace,
  type Trace,
  type TraceSummary,
  type TrainingBudget,
} from '@allot/workloads';
import { type DeviceModel, replayDevice } from './analysis/device';
import { isStateDump } from './analysis/dump-estimate';
import { type Explanation, explainWorkload } from './analysis/explain';
import { measureRow, type RowResult } from './analysis/measure';
import { oomProbes } from './analysis/oom-probes';
import { poolInstance } from './analysis/pool-instance';
import { type OomFigures, oomFigures, postMortem } from './analysis/post-mortem';
import { type LabRow, profileOf, TUNED_ROW, tuningOf } from './analysis/registry';
import {
  type RecordedReleases,
  ReleaseWatch,
  recordedReleases,
  watchesReleases,
} from './analysis/releases';
import { beginReplay } from './analysis/row-instance';
import { type DumpFigures, dumpFigures, explainDump } from './analysis/state-dump';
import { runPool, type TuneResult } from './analysis/tune';

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
  /** Reserved bytes when the recording began (its starting state). */
  readonly reservedAtStartBytes?: number;
  /** How the starting state was found: `exact`, `estimated`, or why there is none. */
  readonly startState?: string;
  /** The replay of the recorded settings set beside the recording (snapshots). */
  readonly fidelity?: Fidelity;
  /** The first out-of-memory error the recording holds (snapshots), and every one of them. */
  readonly oom?: OomFigures;
  readonly recordedOoms?: readonly OomFigures[];
}

/**
 * How faithfully the row with the recording's own settings replays it: peak reserved (starting state
 * included, as the window's own peak) and the segment decisions inside the window, matched in
 * order (a longest common subsequence of sizes, so one extra decision does not shift all the rest).
 */
export interface Fidelity {
  readonly allocator: string;
  readonly config: string;
  /**
   * The settings were not recorded (profiler traces, snapshots of PyTorch before about 2.1):
   * PyTorch's defaults were assumed.
   */
  readonly assumedSettings: boolean;
  /**
   * What the recorded peak is: a snapshot's, the reserved bytes at the start of its window plus
   * the segment decisions in it (the peak within the window); a profiler trace's, its largest
   * `Total Reserved`.
   */
  readonly recordedPeakSource: 'window' | 'total-reserved';
  readonly recordedPeakReservedBytes: number;
  readonly predictedPeakReservedBytes: number;
  /** `(predicted − recorded) / recorded`; null when nothing was recorded reserved (0 bytes). */
  readonly error: number | null;
  /** The segment decisions inside the window, when the recording states them (snapshots). */
  readonly segments?: SegmentFidelity;
  /** Segments the recording gave back, replayed at the same places, and what they say of the card. */
  readonly releases?: RecordedReleases;
  /**
   * `--capacity` in bytes when one was given: these figures come from a replay without it, as the
   * recording ran (the table's row ran under it).
   */
  readonly capacitySetAside?: number;
}

/** PyTorch's segment decisions in the window beside the replay's. */
export interface SegmentFidelity {
  readonly recorded: number;
  readonly recordedBytes: number;
  readonly predicted: number;
  readonly predictedBytes: number;
  /** Recorded decisions matched by one of ours of the same size, in order. */
  readonly matched: number;
  /** `matched / recorded` (1 when there were none). */
  readonly matchFraction: number;
  /** The first decision where the sequences part: its index, the event it served, both sizes. */
  readonly firstDifference?: {
    readonly index: number;
    readonly event: number;
    readonly recordedSize: number;
    readonly predictedSize: number | null;
  };
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
  /** What the report shows beyond the table: timeline, peak, diagnosis (see analysis/explain.ts). */
  readonly explain?: Explanation;
  /**
   * A state dump's answer (see analysis/state-dump.ts): its segments in figures, and what the same
   * live blocks need under each setting, an estimate. Its rows are those estimates.
   */
  readonly dump?: DumpFigures;
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
  /** Rows for this workload only, after the common ones (a snapshot's recorded settings). */
  readonly extraRows?: readonly LabRow[];
  /** The row whose settings are the recording's own, for {@link Fidelity}. */
  readonly recordedRow?: string;
  /** The tuner's search on this trace (PyTorch traces), for the report's recommendation. */
  readonly tuning?: TuneResult;
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
    reservedAtStartBytes: n('torchReservedAtStartBytes'),
    startState: typeof meta.startState === 'string' ? meta.startState : undefined,
  };
  for (const key of Object.keys(figures)) if (figures[key] === undefined) delete figures[key];
  return figures as TorchFigures;
}

/**
 * Answers for a row on a trace: `measure()` measures it; a memo may give back what it kept from an
 * earlier call with the same row, trace and device instead (the web app's what-if replays only the
 * row whose settings changed).
 */
export type RowMemo = (trace: Trace, row: LabRow, measure: () => RowResult) => RowResult;

/**
 * Measures every row on every workload (`skipTiming`: no ns/event, as a job's rank reports; `memo`:
 * see {@link RowMemo}).
 */
export function runWorkloads(
  inputs: readonly WorkloadInput[],
  rows: readonly LabRow[],
  capacity: number | null,
  progress?: Progress,
  device?: DeviceModel,
  measure: { readonly skipTiming?: boolean; readonly memo?: RowMemo } = {},
): WorkloadResult[] {
  const { memo, ...timing } = measure;
  // A state dump is answered by the caching rows alone, each an estimate, untimed (a few blocks
  // allocated once: no figure to time).
  const rowsOf = (input: WorkloadInput) => {
    const all = [...rows, ...(input.extraRows ?? [])];
    if (!isStateDump(input.trace)) return all;
    // With no live block, there is nothing to estimate.
    return input.trace.length > 0 ? all.filter((row) => row.kind === 'pool') : [];
  };
  let total = 0;
  for (const input of inputs) total += rowsOf(input).length;
  let done = 0;
  return inputs.map((input) => {
    const { trace } = input;
    const summary = summarizeTrace(trace);
    const profile = profileOf(trace);
    const results: RowResult[] = [];
    const figures = torchFigures(trace.meta);
    const dump = isStateDump(trace);
    // The recorded row's sampled pass is the replay that tells the recording's releases apart.
    let watch: ReleaseWatch | undefined;
    for (const row of rowsOf(input)) {
      progress?.(done, total, `${input.id} × ${row.name}`);
      const rowDevice = replayDevice(trace, device);
      const watches =
        row.name === input.recordedRow &&
        capacity === null &&
        figures?.peakReservedBytes !== undefined &&
        watchesReleases(trace);
      const measured = () => {
        const rowWatch = watches ? new ReleaseWatch(trace, figures.peakReservedBytes!) : undefined;
        const result = measureRow(trace, row, profile, capacity, {
          ...timing,
          ...(dump ? { skipTiming: true } : {}),
          device: rowDevice,
          ...(rowWatch ? { beforeRelease: rowWatch.before.bind(rowWatch) } : {}),
        });
        if (rowWatch !== undefined) watch = rowWatch;
        return withRecordedOoms(trace, result, rowDevice);
      };
      results.push(memo ? memo(trace, row, measured) : measured());
      done++;
    }
    if (dump) return dumpResult(input, results, summary, figures, tuningFor(input, rows, device));
    const recorded = results.find((row) => row.allocator === input.recordedRow);
    const released =
      figures?.peakReservedBytes !== undefined
        ? recordedReleases(
            trace,
            figures.peakReservedBytes,
            recorded?.config,
            replayDevice(trace, device),
            watch,
          )
        : undefined;
    const fidelity =
      figures?.peakReservedBytes !== undefined && recorded !== undefined
        ? {
            ...fidelityOf(
              asRecorded(trace, recorded, capacity, device),
              figures.peakReservedBytes,
              trace.recordedSegments,
              figures.allocConf === undefined,
              trace.meta.format === 'torch-profiler' ? 'total-reserved' : 'window',
            ),
            ...(released !== undefined ? { releases: released } : {}),
            ...(capacity !== null ? { capacitySetAside: capacity } : {}),
          }
        : undefined;
    const ooms = oomFigures(trace, device);
    if (ooms.length > 0 && recorded?.config !== undefined) {
      ooms[0] = { ...ooms[0]!, ...postMortem(trace, recorded.config, device, input.tuning) };
    }
    const withFidelity = figures && fidelity ? { ...figures, fidelity } : figures;
    const torch =
      withFidelity && ooms.length > 0
        ? { ...withFidelity, oom: ooms[0]!, recordedOoms: ooms }
        : withFidelity;
    return {
      ...headerOf(input, summary),
      ...(input.budget ? { budget: input.budget } : {}),
      ...(torch ? { torch } : {}),
      rows: results,
      explain: explainWorkload(trace, results, {
        ...(input.recordedRow !== undefined ? { recordedRow: input.recordedRow } : {}),
        ...tuningFor(input, rows, device),
        ...(figures?.peakReservedBytes !== undefined
          ? { recordedPeakReservedBytes: figures.peakReservedBytes }
          : {}),
      }),
    };
  });
}

/** What a workload's result says of its input before any replay: its names and its figures. */
function headerOf(input: WorkloadInput, summary: TraceSummary) {
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
    meta: input.trace.meta,
  };
}

/** A state dump's result: its rows are estimates, and its answer the dump's own figures. */
function dumpResult(
  input: WorkloadInput,
  rows: RowResult[],
  summary: TraceSummary,
  torch: TorchFigures | undefined,
  tuning: { tuning?: TuneResult },
): WorkloadResult {
  const { trace } = input;
  const dump = dumpFigures(trace, rows, input.recordedRow);
  return {
    ...headerOf(input, summary),
    ...(torch ? { torch } : {}),
    rows,
    explain: explainDump(trace, dump, {
      ...(input.recordedRow !== undefined ? { recordedRow: input.recordedRow } : {}),
      ...tuning,
    }),
    dump,
  };
}

/**
 * A caching row with {@link RowResult.recordedOomsFailed}: the same replay asking for the requests
 * of the recording's out-of-memory errors at their places, at the wall.
 */
function withRecordedOoms(
  trace: Trace,
  row: RowResult,
  device: DeviceModel | undefined,
): RowResult {
  if (row.config === undefined || device?.memory == null || oomProbes(trace).length === 0)
    return row;
  const probed = runPool(trace, parseAllocConf(row.config), device);
  return { ...row, recordedOomsFailed: Math.max(0, probed.failures - row.failures) };
}

/**
 * The tuner's search for a workload's advice: the input's, else the one its caching-tuned row
 * replayed (already searched: one answer for the row and the advice).
 */
function tuningFor(
  input: WorkloadInput,
  rows: readonly LabRow[],
  device: DeviceModel | undefined,
): { tuning?: TuneResult } {
  if (input.tuning !== undefined) return { tuning: input.tuning };
  if (!rows.some((row) => row.name === TUNED_ROW)) return {};
  if (isStateDump(input.trace) && input.trace.length === 0) return {};
  return { tuning: tuningOf(input.trace, replayDevice(input.trace, device)) };
}

/**
 * The row replaying the recorded settings as the recording ran: under `--capacity` the row itself is
 * a what-if (its pool gives segments back to stay under the capacity, where PyTorch had its whole
 * device), so its settings are replayed again without it, for {@link Fidelity}.
 */
function asRecorded(
  trace: Trace,
  row: RowResult,
  capacity: number | null,
  device: DeviceModel | undefined,
): RowResult {
  if (capacity === null || row.config === undefined) return row;
  const instance = poolInstance(
    parseAllocConf(row.config),
    trace,
    null,
    replayDevice(trace, device),
  );
  const state = beginReplay(instance, trace);
  state.run();
  return {
    ...row,
    peakReservedBytes: instance.peakReserved(state),
    segments: instance.segments!(),
  };
}

/** Sets the row replaying the recorded settings beside the recording (see {@link Fidelity}). */
export function fidelityOf(
  row: RowResult,
  recordedPeak: number,
  recordedSegments: readonly RecordedSegment[] | undefined,
  assumedSettings = false,
  recordedPeakSource: Fidelity['recordedPeakSource'] = 'window',
): Fidelity {
  return {
    allocator: row.allocator,
    config: row.config ?? '',
    assumedSettings,
    recordedPeakSource,
    recordedPeakReservedBytes: recordedPeak,
    predictedPeakReservedBytes: row.peakReservedBytes,
    error: recordedPeak > 0 ? (row.peakReservedBytes - recordedPeak) / recordedPeak : null,
    ...(recordedSegments !== undefined
      ? { segments: segmentFidelity(recordedSegments, row.segments?.sizes ?? []) }
      : {}),
  };
}

/** PyTorch's segment decisions beside `ours` (see {@link SegmentFidelity}). */
export function segmentFidelity(
  recordedSegments: readonly RecordedSegment[],
  ours: readonly number[],
): SegmentFidelity {
  const theirs = recordedSegments.map((segment) => segment.size);
  const matched = commonSubsequence(theirs, ours);
  let firstDifference: SegmentFidelity['firstDifference'];
  for (let i = 0; i < theirs.length; i++) {
    if (theirs[i] !== ours[i]) {
      firstDifference = {
        index: i,
        event: recordedSegments[i]!.event,
        recordedSize: theirs[i]!,
        predictedSize: ours[i] ?? null,
      };
      break;
    }
  }
  const sum = (sizes: readonly number[]) => sizes.reduce((a, b) => a + b, 0);
  return {
    recorded: theirs.length,
    recordedBytes: sum(theirs),
    predicted: ours.length,
    predictedBytes: sum(ours),
    matched,
    matchFraction: theirs.length > 0 ? matched / theirs.length : 1,
    ...(firstDifference ? { firstDifference } : {}),
  };
}

/** Above this many cells the common subsequence is found greedily (a lower bound, in linear time). */
const EXACT_MATCH_CELLS = 5e7;

/**
 * Length of the longest common subsequence of `a` and `b` (O(|a|·|b|) time, O(|b|) memory); for
 * very long sequences, a greedy in-order match instead, which never counts more than the exact one.
 */
export function commonSubsequence(a: readonly number[], b: readonly number[]): number {
  if (a.length * b.length > EXACT_MATCH_CELLS) {
    const positions = new Map<number, number[]>();
    b.forEach((value, i) => {
      const list = positions.get(value);
      if (list) list.push(i);
      else positions.set(value, [i]);
    });
    let matched = 0;
    let j = 0;
    for (const value of a) {
      const list = positions.get(value);
      if (list === undefined) continue;
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (list[mid]! < j) lo = mid + 1;
        else hi = mid;
      }
      if (lo < list.length) {
        matched++;
        j = list[lo]! + 1;
      }
    }
    return matched;
  }
  let previous = new Uint32Array(b.length + 1);
  let current = new Uint32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      current[j] =
        a[i - 1] === b[j - 1] ? previous[j - 1]! + 1 : Math.max(previous[j]!, current[j - 1]!);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length]!;
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

/** What ran a set of workloads: the command, where, and the options every workload shares. */
export type RunHeader = Pick<LabResults, 'command' | 'node' | 'platform'> &
  Partial<Pick<LabResults, 'createdAt' | 'seed' | 'capacity'>>;

/** The results of `workloads` measured under `header` (created now, with no seed or capacity unless it says). */
export function labResults(
  header: RunHeader,
  workloads: WorkloadResult[],
  targets: TargetResult[] = [],
): LabResults {
  return {
    tool: 'allot-lab',
    version: 1,
    createdAt: new Date().toISOString(),
    seed: null,
    capacity: null,
    ...header,
    workloads,
    targets,
    failures: countFailures(workloads),
  };
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
      explain: workload.explain && {
        diagnosis: workload.explain.diagnosis,
        ...(workload.explain.advice ? { advice: workload.explain.advice } : {}),
        peak: workload.explain.peak,
      },
      ...(workload.dump ? { dump: { ...workload.dump, layout: undefined } } : {}),
    })),
  };
}
