/**
 * The live page's data: the job `allot-lab serve --watch DIR` follows, as it sends it to a page
 * (`/watch/state`, and each `state` event of `/watch/updates`). The server makes it
 * (watch/served-watch.ts, checked against these types when the lab builds); live-page.ts draws
 * it. As in the report's data, text the terminal prints too (the advice, the post-mortem) comes
 * written, in the words of `allot-lab watch`; figures the page draws come as numbers, in bytes.
 */
import type { OomFigures } from '../analysis/post-mortem';
import type { JobAdvice } from '../job/advice';

/** One figure of `memory_stats()` per pool, in bytes. */
export type LivePools = Readonly<Record<'all' | 'small_pool' | 'large_pool', number>>;

/** The `memory_stats()` figures (`FAMILY.POOL.current`) the page shows, at a rank's latest dump. */
export interface LiveStats {
  readonly reserved_bytes: LivePools;
  readonly allocated_bytes: LivePools;
  /** Free blocks in segments that also hold others: what `empty_cache()` cannot give back. */
  readonly inactive_split_bytes: LivePools;
}

/** One dump of a rank, as it landed: a point of its charts. */
export interface LiveTrendPoint {
  readonly step: number | null;
  /** The dump, relative to the folder watched. */
  readonly file: string;
  /** PyTorch's peak reserved bytes within the entries this dump added, or null for none. */
  readonly recordedPeakBytes: number | null;
  /** The replay of the recorded settings over the rank's timeline so far. */
  readonly peakReservedBytes: number;
  /** `reserved_bytes.all.current` and `allocated_bytes.all.current` at the dump. */
  readonly reservedBytes: number;
  readonly allocatedBytes: number;
  /** The timeline so far under the job's advice then, or null before there was one. */
  readonly advisedPeakReservedBytes: number | null;
}

/** A rank, at its latest dump. */
export interface LiveRank {
  readonly rank: number;
  /** The CUDA device its dumps are followed on. */
  readonly device: number;
  readonly file: string;
  readonly step: number | null;
  /** Dumps merged into its timeline. */
  readonly dumps: number;
  readonly stats: LiveStats;
  /** PyTorch's peak reserved bytes over the timeline, as recorded. */
  readonly recordedPeakReservedBytes: number;
  /** The replay of the recorded settings over the timeline (`replay --json`'s fidelity figure). */
  readonly peakReservedBytes: number;
  /** Under the job's advice so far, or null before there is one. */
  readonly advisedPeakReservedBytes: number | null;
  /** The settings it was recorded with, or null when the recording states none. */
  readonly recordedConf: string | null;
  /** Entries in its timeline. */
  readonly entries: number;
  /** Why its timeline broke, once per gap. */
  readonly gaps: readonly string[];
  /** Its dumps, oldest first (the latest 64). */
  readonly trend: readonly LiveTrendPoint[];
  /** The dump its out-of-memory error was in, or null while it lives. */
  readonly diedAt: { readonly file: string; readonly step: number | null } | null;
}

/** A rank's out-of-memory error and its post-mortem. */
export interface LiveOom {
  readonly rank: number;
  readonly file: string;
  readonly step: number | null;
  /** The same object as `replay FILE --json`'s `torch.oom` for the dump. */
  readonly oom: OomFigures;
  /** The post-mortem as `allot-lab watch` prints it, a line each. */
  readonly lines: readonly string[];
}

/** The job now. */
export interface LiveState {
  /** The folder followed, absolute. */
  readonly folder: string;
  /** By rank. */
  readonly ranks: readonly LiveRank[];
  /** The one setting for every rank so far, as `tune DIR` picks it; null before any rank. */
  readonly advice: JobAdvice | null;
  /** The advice as `allot-lab watch` prints it (`advice so far: ...`). */
  readonly adviceText: string;
  /** The post-mortems so far, by rank. */
  readonly ooms: readonly LiveOom[];
  /** Files that could not be read, with why. */
  readonly skipped: readonly { readonly file: string; readonly message: string }[];
}
