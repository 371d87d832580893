/**
 * What a job found, as `--json` prints it: the figures each rank's worker sent back, and what the
 * main thread drew from them (the worst rank, the spread, the setting for every rank). A shard's
 * output carries every rank's peak per setting, so `merge` draws the same conclusions from the
 * shards as one machine does from the whole job ({@link jobResults} is the one place that draws
 * them).
 */
import type { Shard } from '../options';
import type { SettingFigures } from './advice';
import { adviseJob, type JobAdvice } from './advice';
import { type SettingGroup, settingGroups } from './job-notes';
import type { JobInput } from './layout';
import type { RankResult } from './rank';

/** A replay error beyond this, or fewer segment decisions matched, flags a rank. */
export const FLAG_ERROR = 0.01;
export const FLAG_MATCH = 0.95;

/** A rank that could not be read or replayed. */
export interface FailedRank {
  readonly rank: number;
  readonly file: string;
  readonly message: string;
  readonly bug: boolean;
}

/** One rank in `--json`: the worker's figures, and the job's setting on it (tune). */
export interface JobRank extends Omit<RankResult, 'settings'> {
  /** Why the recording disagrees with the model, or null. */
  readonly flagged: string | null;
  /** replay: one per `--config`. */
  readonly configs?: readonly SettingFigures[];
  /** tune: peak reserved under the job's setting (null when not tuned as one) and the defaults. */
  readonly peakReservedBytes?: number | null;
  readonly defaultsPeakReservedBytes?: number;
  readonly failures?: number | null;
  readonly defaultsFailures?: number;
  /** tune: per candidate, in the order of the top-level `candidates`. */
  readonly candidatePeakReservedBytes?: readonly number[];
  readonly candidateFailures?: readonly number[];
  readonly candidateSegmentCalls?: readonly number[];
}

export type { SettingGroup } from './job-notes';

/** Everything a job found (`--json`). */
export interface JobResults {
  readonly tool: 'allot-lab';
  readonly version: 1;
  readonly job: 'replay' | 'tune';
  readonly command: string;
  readonly createdAt: string;
  readonly node: string;
  readonly platform: string;
  readonly input: Omit<JobInput, 'ranks'>;
  /** Every rank of the job, this shard's or not. */
  readonly jobRanks: readonly number[];
  readonly shard: Shard | null;
  /** tune: the settings every rank was replayed under; replay: the `--config` settings. */
  readonly candidates: readonly string[];
  /** tune: the setting for every rank ('' for the defaults), null when not tuned as one. */
  readonly allocConf?: string | null;
  readonly advice?: JobAdvice | null;
  /** The rank with the highest predicted peak reserved under its recorded settings. */
  readonly worst: { readonly rank: number; readonly peakReservedBytes: number } | null;
  /** Between ranks, under their recorded settings: the lowest and highest predicted peak. */
  readonly spread: {
    readonly minRank: number;
    readonly minBytes: number;
    readonly maxRank: number;
    readonly maxBytes: number;
  } | null;
  /** Settings recorded, when the ranks disagree (the job is not tuned as one without --force). */
  readonly mixedSettings?: readonly SettingGroup[];
  readonly forced?: boolean;
  readonly ranks: readonly JobRank[];
  readonly failed: readonly FailedRank[];
}

/** The facts of a job that are not per rank: what `jobResults` starts from. */
export type JobFrame = Pick<
  JobResults,
  | 'job'
  | 'command'
  | 'createdAt'
  | 'node'
  | 'platform'
  | 'input'
  | 'jobRanks'
  | 'shard'
  | 'candidates'
> & { readonly force: boolean };

/** Why a rank's recording disagrees with the model, or null (see FLAG_ERROR, FLAG_MATCH). */
export function flagOf(result: RankResult): string | null {
  const f = result.fidelity;
  if (f === null) return null;
  const reasons: string[] = [];
  if (f.error !== null && Math.abs(f.error) > FLAG_ERROR) {
    reasons.push(
      `predicted peak reserved ${f.error > 0 ? '+' : '−'}${(Math.abs(f.error) * 100).toFixed(1)} % from the recorded`,
    );
  }
  if (f.segmentsRecorded !== undefined && f.segmentsMatched !== undefined) {
    const fraction = f.segmentsRecorded > 0 ? f.segmentsMatched / f.segmentsRecorded : 1;
    if (fraction < FLAG_MATCH) {
      reasons.push(`${f.segmentsMatched} of ${f.segmentsRecorded} segment decisions matched`);
    }
  }
  return reasons.length > 0 ? reasons.join(', ') : null;
}

interface RankPeakPair {
  readonly rank: number;
  readonly bytes: number;
}

/** Draws the job's conclusions from its ranks (see the module comment). */
export function jobResults(
  frame: JobFrame,
  results: readonly RankResult[],
  failed: readonly FailedRank[],
): JobResults {
  const { force, ...rest } = frame;
  const ranks = [...results].sort((a, b) => a.rank - b.rank);
  let min: RankPeakPair | null = null;
  let max: RankPeakPair | null = null;
  for (const rank of ranks) {
    const peak = rank.replayed?.peakReservedBytes;
    if (peak === undefined) continue;
    if (max === null || peak > max.bytes) max = { rank: rank.rank, bytes: peak };
    if (min === null || peak < min.bytes) min = { rank: rank.rank, bytes: peak };
  }
  const worst = max && { rank: max.rank, peakReservedBytes: max.bytes };
  const spread = min &&
    max && { minRank: min.rank, minBytes: min.bytes, maxRank: max.rank, maxBytes: max.bytes };
  const groups = settingGroups(ranks);
  const mixed = groups.length > 1;
  const base = {
    tool: 'allot-lab' as const,
    version: 1 as const,
    ...rest,
    worst,
    spread,
    ...(mixed ? { mixedSettings: groups } : {}),
    ...(mixed && force ? { forced: true } : {}),
    failed: [...failed].sort((a, b) => a.rank - b.rank),
  };
  if (frame.job === 'replay') {
    return {
      ...base,
      ranks: ranks.map(({ settings, ...rank }) => ({
        ...rank,
        flagged: flagOf(rank as RankResult),
        configs: settings,
      })),
    };
  }
  const advice = mixed && !force ? null : adviseJob(frame.candidates, ranks);
  const defaultsIndex = frame.candidates.indexOf('');
  return {
    ...base,
    allocConf: advice?.config ?? null,
    advice,
    ranks: ranks.map(({ settings, ...rank }) => ({
      ...rank,
      flagged: flagOf(rank as RankResult),
      peakReservedBytes: advice ? settings[advice.index]!.peakReservedBytes : null,
      defaultsPeakReservedBytes: settings[defaultsIndex]!.peakReservedBytes,
      failures: advice ? settings[advice.index]!.failures : null,
      defaultsFailures: settings[defaultsIndex]!.failures,
      candidatePeakReservedBytes: settings.map((s) => s.peakReservedBytes),
      candidateFailures: settings.map((s) => s.failures),
      candidateSegmentCalls: settings.map((s) => s.segmentCalls),
    })),
  };
}

/** The worker's figures of a rank back from its `--json` form (for `merge`). */
export function rankOf(rank: JobRank, candidates: readonly string[]): RankResult {
  const {
    flagged: _flagged,
    configs,
    peakReservedBytes: _peak,
    defaultsPeakReservedBytes: _defaultsPeak,
    failures: _failures,
    defaultsFailures: _defaultsFailures,
    candidatePeakReservedBytes: peaks,
    candidateFailures: failures,
    candidateSegmentCalls: calls,
    ...result
  } = rank;
  const settings =
    configs ??
    candidates.map((config, i) => ({
      config,
      peakReservedBytes: peaks?.[i] ?? Number.NaN,
      failures: failures?.[i] ?? 0,
      segmentCalls: calls?.[i] ?? 0,
    }));
  return { ...result, settings };
}
