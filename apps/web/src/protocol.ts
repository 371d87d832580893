/**
 * The messages between the page and its two workers. The engine worker reads the files and keeps
 * their traces; the tuner worker gets a copy of each trace (without stack frames) from the engine
 * over a channel of their own, so a search of settings never holds up a what-if. Only figures and
 * the report's page data travel to the page, never a trace: the page draws the report and reads
 * every figure it shows beside it from that data.
 *
 * ```
 *  page ── open, replay, tuning ──► engine ── traces (channel) ──► tuner ◄── tune ── page
 *  page ◄── progress, opened, failed, replayed ── engine      tuner ── tried, tuned ──► page
 * ```
 */
import type {
  Advice,
  FailedRankNote,
  GroupBy,
  GrownGroup,
  JobAdviceText,
  PoolState,
  Trace,
  TuneResult,
} from '@allot/lab/engine';
import type { ReportData, StackTreeData } from '@allot/lab/report';
import type { RowBrief } from '@allot/lab/ui';

/** The settings and the device the page's controls state. */
export interface Knobs {
  readonly expandableSegments: boolean;
  /** `max_split_size_mb`, or null for no limit. */
  readonly maxSplitSizeMb: number | null;
  /** `roundup_power2_divisions` for every size, or null for the recording's own (per size). */
  readonly roundupPower2Divisions: number | null;
  /** `garbage_collection_threshold` (0: off). */
  readonly garbageCollectionThreshold: number;
  /** The card's memory in GiB, or null when not stated. */
  readonly memoryGiB: number | null;
  /** The per-process memory fraction, or null for none. */
  readonly fraction: number | null;
}

/** A trace as the page lists it once read. */
export interface OpenedTrace {
  readonly name: string;
  readonly events: number;
  /** The recording's `PYTORCH_CUDA_ALLOC_CONF`, or null when it states none. */
  readonly recordedConfig: string | null;
  /** The controls at the recording's own settings. */
  readonly recordedKnobs: Knobs;
  /** The card's memory the recording states, in bytes. */
  readonly deviceMemoryBytes: number | null;
}

/** Where the bytes of a file come from: a file, the local server, or the sample made in the page. */
export type FileSource =
  /** A file, and the sidecar `allot-lab record` wrote beside it, when it was given too. */
  | { readonly kind: 'file'; readonly file: File; readonly sidecar?: File }
  | { readonly kind: 'url'; readonly url: string; readonly name: string }
  | { readonly kind: 'sample' };

/** The call tree of the blocks live at an event, its frames indices into `frameTexts`. */
export interface StateStacks {
  readonly tree: StackTreeData;
  readonly frameTexts: readonly string[];
}

export type ToEngine =
  | { readonly type: 'open'; readonly id: number; readonly source: FileSource }
  /** Forget file `id`'s traces (the page took the file away). */
  | { readonly type: 'remove'; readonly id: number }
  | { readonly type: 'replay'; readonly seq: number; readonly knobs: Knobs }
  /** The tuner's search on trace `index`, for the report's advice (null: forget it). */
  | { readonly type: 'tuning'; readonly index: number; readonly result: TuneResult | null }
  | { readonly type: 'tuner'; readonly port: MessagePort }
  | StateRequest
  | JobRequest
  /** The allocations that grew from trace `before`'s peak to trace `after`'s. */
  | {
      readonly type: 'compare';
      readonly seq: number;
      readonly before: number;
      readonly after: number;
    };

/** One setting for every rank: each rank's trace (by index) under the job's candidates. */
export interface JobRequest {
  readonly type: 'job';
  readonly seq: number;
  readonly ranks: readonly { readonly rank: number; readonly trace: number }[];
  readonly knobs: Knobs;
}

/** The pool of trace `trace` just after event `event`, under the controls' settings. */
export interface StateRequest {
  readonly type: 'state';
  readonly seq: number;
  readonly trace: number;
  readonly event: number;
  readonly knobs: Knobs;
}

export type FromEngine =
  | {
      readonly type: 'progress';
      readonly id: number;
      readonly bytesRead: number;
      readonly totalBytes: number | null;
      readonly events: number;
    }
  /** File `id` was read; files are answered in the order they were given, whichever is read first. */
  | { readonly type: 'opened'; readonly id: number; readonly traces: readonly OpenedTrace[] }
  /** File `id`'s traces, indices `[first, first + count)`, are forgotten; later ones move down. */
  | {
      readonly type: 'removed';
      readonly id: number;
      readonly first: number;
      readonly count: number;
    }
  | { readonly type: 'failed'; readonly id: number; readonly message: string }
  | {
      readonly type: 'replayed';
      readonly seq: number;
      /** The replay's report, as data (`renderSections` draws it). */
      readonly report: ReportData;
      readonly command: string;
      /** The what-if's canonical `PYTORCH_CUDA_ALLOC_CONF`. */
      readonly config: string;
      readonly milliseconds: number;
    }
  | { readonly type: 'replay-failed'; readonly seq: number; readonly message: string }
  | {
      readonly type: 'state';
      readonly seq: number;
      readonly trace: number;
      readonly state: PoolState;
      /** Who holds the memory then, by call stack; null when the recording has no stacks. */
      readonly stacks: StateStacks | null;
    }
  | {
      readonly type: 'compared';
      readonly seq: number;
      readonly by: GroupBy;
      readonly groups: readonly GrownGroup[];
    }
  | { readonly type: 'inspect-failed'; readonly seq: number; readonly message: string }
  | {
      readonly type: 'job-progress';
      readonly seq: number;
      /** Replays done of the job's total (ranks × candidates). */
      readonly done: number;
      readonly total: number;
    }
  | {
      readonly type: 'job-advised';
      readonly seq: number;
      /** Canonical `PYTORCH_CUDA_ALLOC_CONF`, '' for PyTorch's defaults. */
      readonly config: string;
      /** The verdict and its reasons, in `tune DIR`'s words. */
      readonly text: JobAdviceText;
      readonly candidates: number;
      /** Ranks replayed. */
      readonly ranks: number;
      /** Ranks left out: their card is smaller than their peak live bytes. */
      readonly failed: readonly FailedRankNote[];
    }
  | { readonly type: 'job-failed'; readonly seq: number; readonly message: string };

export type ToTuner =
  | { readonly type: 'engine'; readonly port: MessagePort }
  | { readonly type: 'tune'; readonly seq: number; readonly knobs: Knobs };

export type FromTuner =
  | {
      readonly type: 'tried';
      readonly seq: number;
      readonly index: number;
      readonly trace: string;
      readonly evaluated: number;
      readonly run: RowBrief;
    }
  | {
      readonly type: 'tuned';
      readonly seq: number;
      readonly index: number;
      readonly trace: string;
      readonly result: TuneResult;
      readonly advice: Advice;
      readonly device: string;
      /** The controls at the advice (the device left as it was). */
      readonly bestKnobs: Knobs;
    }
  | { readonly type: 'tune-failed'; readonly seq: number; readonly message: string };

/**
 * What goes from the engine to the tuner: the traces of each file, as they are read, and those of
 * a file taken away (indices `[first, first + count)`).
 */
export type TracesForTuner =
  | { readonly type: 'traces'; readonly traces: readonly Trace[] }
  | { readonly type: 'remove'; readonly first: number; readonly count: number };
