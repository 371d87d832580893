/**
 * One rank of a job: read its trace (the streaming reader), replay it through the caching pool
 * under its recorded settings and under each setting asked for, and keep a few numbers per
 * setting. A worker thread runs this for one rank at a time and posts back the result, never the
 * trace; with one job (and in the tests, which run the source) the main thread runs it.
 */
import { parseAllocConf } from '@allot/caching';
import type { Trace } from '@allot/workloads';
import {
  type DeviceModel,
  type DeviceOrigin,
  replayDevice,
  searchDevice,
} from '../analysis/device';
import { type OomFigures, oomFigures } from '../analysis/post-mortem';
import { type PoolRun, runPool, segmentCalls } from '../analysis/tune';
import { inFiles, inputFailureMessage } from '../failure';
import { checkMemoryHoldsTrace, type InputOptions, readTraceFiles } from '../input';
import { segmentFidelity } from '../run';
import type { SettingFigures } from './advice';
import { canonicalConf } from './candidates';
import { rankReportPath, writeRankReport } from './rank-report';

/** What a worker is asked to do for one rank. Plain data: it crosses to a worker thread. */
export interface RankTask {
  readonly rank: number;
  /** The file as the output names it. */
  readonly file: string;
  /** The folder `file` is relative to. */
  readonly cwd: string;
  readonly mode: 'replay' | 'tune';
  readonly input: InputOptions;
  /** `--memory` in bytes, or null. */
  readonly memory: number | null;
  readonly fraction: number | null;
  /** The settings to replay it under: `--config` (replay), the job's candidates (tune). */
  readonly configs: readonly string[];
  /** The job's report folder (absolute), where the rank's own page goes; null for none. */
  readonly report: string | null;
}

/** How the replay under the recorded settings compares with what the recording states. */
export interface RankFidelity {
  /** `(predicted − recorded) / recorded`, or null when nothing was recorded reserved. */
  readonly error: number | null;
  readonly segmentsRecorded?: number;
  readonly segmentsMatched?: number;
}

/** What a worker posts back for one rank: a few hundred bytes, whatever the trace's size. */
export interface RankResult {
  readonly rank: number;
  readonly file: string;
  /** The trace read (a file with several devices: the one with the most events). */
  readonly trace: string;
  readonly events: number;
  readonly peakLiveBytes: number;
  /** `PYTORCH_CUDA_ALLOC_CONF` as recorded, or null when the recording states none. */
  readonly recordedConf: string | null;
  /** PyTorch's own peak reserved bytes in the recording, or null. */
  readonly recordedPeakReservedBytes: number | null;
  /**
   * The pool under the recorded settings (PyTorch's defaults when none are recorded), or null for
   * settings the pool cannot model.
   */
  readonly replayed: (SettingFigures & { readonly assumedSettings: boolean }) | null;
  readonly fidelity: RankFidelity | null;
  /** The device replayed on, and (tune) where its memory figure came from. */
  readonly device: DeviceModel & { readonly origin?: DeviceOrigin };
  /** One per setting of the task, in its order. */
  readonly settings: readonly SettingFigures[];
  /** The rank's own page, relative to the job's report folder, when one was written. */
  readonly report?: string;
  /** Seconds spent on the rank (reading and replays). */
  readonly seconds: number;
  /**
   * The rank's first recorded out-of-memory error: its entry, the request, and the wall (reserved
   * plus `device_free`); with it every setting also asks for the request at its place.
   */
  readonly oom?: {
    readonly event: number;
    readonly sizeBytes: number;
    readonly capacityBytes: number | null;
    readonly capacitySource: OomFigures['capacitySource'];
  };
}

/** Hears how many bytes of the rank's file were read. */
export type RankListener = (bytesRead: number) => void;

function figuresOf(run: PoolRun): SettingFigures {
  return {
    config: run.config,
    peakReservedBytes: run.peakReservedBytes,
    failures: run.failures,
    segmentCalls: segmentCalls(run),
  };
}

/** Lets the event loop turn (progress, a test runner's messages) between replays. */
const breathe = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Reads and replays one rank (see the module comment). Throws what reading or replaying throws. */
export async function analyseRank(task: RankTask, onProgress?: RankListener): Promise<RankResult> {
  const started = performance.now();
  const traces = await readTraceFiles(
    [task.file],
    task.input,
    task.cwd,
    onProgress ? (_file, read) => onProgress(read.bytesRead) : undefined,
  );
  const trace = traces.reduce((a, b) => (b.length > a.length ? b : a));
  const stated = { memory: task.memory, fraction: task.fraction };
  let device: RankResult['device'];
  if (task.mode === 'tune') {
    checkMemoryHoldsTrace(trace, task.memory, task.fraction);
    const found = searchDevice(trace, stated);
    device = { ...found.device, origin: found.origin };
  } else {
    // As `replay FILE` does: the wall of a recorded out-of-memory error unless --memory states one.
    device = replayDevice(trace, stated);
  }
  // Beside the recording, the device it was recorded on (tune's --memory is a what-if, not that).
  const recordedOn = task.mode === 'tune' ? replayDevice(trace) : device;
  const replayed = await replayRecorded(trace, recordedOn);
  const settings: SettingFigures[] = [];
  for (const config of task.configs) {
    await breathe();
    settings.push(figuresOf(runPool(trace, parseAllocConf(config), device)));
  }
  if (task.report !== null) {
    await breathe();
    writeRankReport(trace, task, task.report, device);
  }
  const recordedPeak = numberOf(trace, 'torchPeakReservedBytes');
  const conf = trace.meta.torchAllocConf;
  return {
    rank: task.rank,
    file: task.file,
    trace: trace.name,
    events: trace.length,
    peakLiveBytes: replayed.peakLiveBytes,
    recordedConf: typeof conf === 'string' ? conf : null,
    recordedPeakReservedBytes: recordedPeak,
    replayed: replayed.figures,
    fidelity:
      replayed.figures && recordedPeak !== null
        ? fidelityOf(trace, replayed.figures, replayed.sizes, recordedPeak)
        : null,
    device,
    settings,
    ...(task.report !== null ? { report: rankReportPath(task.rank) } : {}),
    seconds: (performance.now() - started) / 1000,
    ...oomOf(trace, stated),
  };
}

function oomOf(trace: Trace, stated: DeviceModel): Pick<RankResult, 'oom'> {
  const [oom] = oomFigures(trace, stated);
  if (oom === undefined) return {};
  return {
    oom: {
      event: oom.recorded.event,
      sizeBytes: oom.recorded.sizeBytes,
      capacityBytes: oom.capacityBytes,
      capacitySource: oom.capacitySource,
    },
  };
}

function numberOf(trace: Trace, key: string): number | null {
  const value = trace.meta[key];
  return typeof value === 'number' ? value : null;
}

/** The replay under the recorded settings, or the defaults when the recording states none. */
async function replayRecorded(
  trace: Trace,
  device: DeviceModel,
): Promise<{
  figures: RankResult['replayed'];
  peakLiveBytes: number;
  sizes: readonly number[];
}> {
  await breathe();
  const conf = trace.meta.torchAllocConf;
  const recorded = typeof conf === 'string' ? canonicalConf(conf) : '';
  const run = runPool(trace, parseAllocConf(recorded ?? ''), device);
  return {
    figures:
      recorded === null ? null : { ...figuresOf(run), assumedSettings: typeof conf !== 'string' },
    peakLiveBytes: run.peakLiveBytes,
    sizes: run.segments.sizes ?? [],
  };
}

function fidelityOf(
  trace: Trace,
  figures: SettingFigures,
  sizes: readonly number[],
  recordedPeak: number,
): RankFidelity {
  const error = recordedPeak > 0 ? (figures.peakReservedBytes - recordedPeak) / recordedPeak : null;
  if (trace.recordedSegments === undefined) return { error };
  const segments = segmentFidelity(trace.recordedSegments, sizes);
  return { error, segmentsRecorded: segments.recorded, segmentsMatched: segments.matched };
}

/** Why a rank failed, on one line, and whether it is a bug in the lab rather than its input. */
export interface RankFailure {
  readonly message: string;
  readonly bug: boolean;
}

/** `error`, thrown while reading or replaying `file`, as the lab's error boundary words it. */
export function failureOf(error: unknown, file: string): RankFailure {
  const input = inputFailureMessage(inFiles(error, [file]));
  if (input !== null) return { message: input, bug: false };
  const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { message: `${file}: internal error, a bug in allot-lab: ${what}`, bug: true };
}
