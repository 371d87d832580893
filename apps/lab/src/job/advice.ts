/**
 * One `PYTORCH_CUDA_ALLOC_CONF` for every rank of a job, picked from each rank's peak per setting
 * (see candidates.ts): the same rule as `tune` (recommend in analysis/tune.ts), on the worst rank.
 *
 * ```
 *  per setting: worst rank's peak reserved, failed allocations over every rank
 *  ruled out:   a setting that fails an allocation on any rank (when one fails on none),
 *               a setting predicted worse than the defaults on any rank
 *  pick:        recommend() on the worst rank's peak: within 1 % of the lowest, the fewest keys;
 *               the defaults unless something is predicted better
 * ```
 */
import { DEFAULT_SETTINGS } from '@allot/caching';
import { type PoolRun, recommend } from '../analysis/tune';

/** The caching pool's figures under one setting. */
export interface SettingFigures {
  readonly config: string;
  /** Peak reserved bytes, starting state included (`reserved_bytes.all.peak`). */
  readonly peakReservedBytes: number;
  readonly failures: number;
  /** `cudaMalloc` and map calls in the window. */
  readonly segmentCalls: number;
}

/** A rank's figures per setting, in the order of the job's candidates. */
export interface RankSettings {
  readonly rank: number;
  readonly settings: readonly SettingFigures[];
}

/** A rank and its peak reserved bytes under a setting. */
export interface RankPeak {
  readonly rank: number;
  readonly peakReservedBytes: number;
}

/** The job's setting. */
export interface JobAdvice {
  /** Index of the setting in the job's candidates. */
  readonly index: number;
  /** Canonical `PYTORCH_CUDA_ALLOC_CONF`, '' for PyTorch's defaults. */
  readonly config: string;
  /** The worst rank under the setting, and under the defaults. */
  readonly worst: RankPeak;
  readonly defaultsWorst: RankPeak;
  /** `defaultsWorst − worst`: what the largest rank saves. */
  readonly savingBytes: number;
  readonly savingFraction: number;
  /** Failed allocations under the setting, over every rank (0 unless every setting fails). */
  readonly failures: number;
  /** Settings left out because they fail allocations on a rank, or are worse on one. */
  readonly ruledOut: { readonly failing: number; readonly worseOnARank: number };
}

function worstOf(ranks: readonly RankSettings[], index: number): RankPeak {
  let worst: RankPeak = { rank: -1, peakReservedBytes: -1 };
  for (const rank of ranks) {
    const peak = rank.settings[index]!.peakReservedBytes;
    if (peak > worst.peakReservedBytes) worst = { rank: rank.rank, peakReservedBytes: peak };
  }
  return worst;
}

/** The job's setting among `candidates` (see the module comment); null with no ranks. */
export function adviseJob(
  candidates: readonly string[],
  ranks: readonly RankSettings[],
): JobAdvice | null {
  if (ranks.length === 0) return null;
  const defaultsIndex = candidates.indexOf('');
  if (defaultsIndex < 0) throw new Error("a job's candidates hold the defaults ('')");
  const runs: PoolRun[] = candidates.map((config, index) => {
    let failures = 0;
    let calls = 0;
    for (const rank of ranks) {
      failures += rank.settings[index]!.failures;
      calls += rank.settings[index]!.segmentCalls;
    }
    return {
      config,
      settings: DEFAULT_SETTINGS, // recommend() reads the config, not the settings
      peakReservedBytes: worstOf(ranks, index).peakReservedBytes,
      peakLiveBytes: 0,
      failures,
      segments: { acquired: calls, released: 0, grown: 0 },
    };
  });
  const worseOnARank = (index: number) =>
    ranks.some((rank) => {
      const own = rank.settings[index]!;
      const defaults = rank.settings[defaultsIndex]!;
      return (
        defaults.failures === 0 &&
        own.failures === 0 &&
        own.peakReservedBytes > defaults.peakReservedBytes
      );
    });
  const leastFailures = Math.min(...runs.map((run) => run.failures));
  let failing = 0;
  let worse = 0;
  const eligible = runs.filter((run, index) => {
    if (index === defaultsIndex) return true;
    if (run.failures > leastFailures) {
      failing++;
      return false;
    }
    if (worseOnARank(index)) {
      worse++;
      return false;
    }
    return true;
  });
  const defaults = runs[defaultsIndex]!;
  const pick = recommend(defaults, eligible);
  const index = runs.indexOf(pick);
  const worst = worstOf(ranks, index);
  const defaultsWorst = worstOf(ranks, defaultsIndex);
  const savingBytes = defaultsWorst.peakReservedBytes - worst.peakReservedBytes;
  return {
    index,
    config: pick.config,
    worst,
    defaultsWorst,
    savingBytes,
    savingFraction:
      defaultsWorst.peakReservedBytes > 0 ? savingBytes / defaultsWorst.peakReservedBytes : 0,
    failures: pick.failures,
    ruledOut: { failing, worseOnARank: worse },
  };
}
