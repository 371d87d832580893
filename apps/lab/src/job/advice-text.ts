/**
 * The job's setting in words, one wording for `tune DIR`, its page and the web app: a verdict (the
 * setting, the defaults, or that every setting fails on this card), then the reasons, with figures
 * that add up (the worst rank under the setting against the worst under the defaults, or the
 * failures the setting avoids).
 */
import { formatBytes, formatCount, formatPercent } from '../units';
import type { JobAdvice } from './advice';
import { rankList } from './rank-name';

/** What the wording needs of each rank replayed. */
export interface JobRankNote {
  readonly rank: number;
  /** Allocations that fail under PyTorch's defaults. */
  readonly defaultsFailures: number;
  /** Whether the rank's recording ran out of memory. */
  readonly died: boolean;
}

/** The verdict, then the reasons (each a line, without indentation). */
export interface JobAdviceText {
  readonly verdict: string;
  readonly reasons: readonly string[];
}

const plural = (count: number, word: string) => `${word}${count === 1 ? '' : 's'}`;

/** The verdict and the reasons for `advice` over `ranks` (see the module comment). */
export function jobAdviceText(advice: JobAdvice, ranks: readonly JobRankNote[]): JobAdviceText {
  const { worst, defaultsWorst: before, ruledOut: ruled } = advice;
  const setting = `PYTORCH_CUDA_ALLOC_CONF=${advice.config}`;
  const reasons: string[] = [];
  let verdict: string;
  const failing = ranks.filter((rank) => rank.defaultsFailures > 0);
  if (advice.failures > 0) {
    const defaults = ranks.reduce((sum, rank) => sum + rank.defaultsFailures, 0);
    verdict =
      'Every setting searched fails allocations on some rank on this device: the memory is too small for the job.';
    reasons.push(
      `the fewest failures: ${formatCount(advice.failures)} in all with ${advice.config === '' ? "PyTorch's defaults" : setting}` +
        `, against ${formatCount(defaults)} with the defaults`,
    );
  } else if (advice.config === '') {
    verdict =
      "PyTorch's defaults are already the best setting found for the job (keep PYTORCH_CUDA_ALLOC_CONF unset):";
    reasons.push(
      `worst rank ${before.rank}: predicted peak reserved ${formatBytes(before.peakReservedBytes)}`,
    );
  } else if (failing.length > 0) {
    // The defaults fail on some rank: the setting is chosen for the failures it avoids, not a saving.
    const count = failing.reduce((sum, rank) => sum + rank.defaultsFailures, 0);
    verdict = setting;
    reasons.push(
      `the defaults fail ${formatCount(count)} ${plural(count, 'allocation')} on ${plural(failing.length, 'rank')} ${rankList(failing.map((rank) => rank.rank))}; ` +
        `this setting fails none, the worst rank ${worst.rank} at ${formatBytes(worst.peakReservedBytes)} peak reserved`,
    );
  } else {
    verdict = setting;
    reasons.push(
      `worst rank ${worst.rank}: predicted peak reserved ${formatBytes(worst.peakReservedBytes)}, against ${formatBytes(before.peakReservedBytes)} on rank ${before.rank} with the defaults: ` +
        `${formatBytes(advice.savingBytes)} saved (${formatPercent(advice.savingFraction)})`,
      'no rank is predicted worse than with the defaults',
    );
  }
  if (advice.failures === 0 && advice.config !== '') {
    const died = ranks.filter((rank) => rank.died).map((rank) => rank.rank);
    if (died.length > 0) {
      reasons.push(
        `it serves the requests that failed on ${plural(died.length, 'rank')} ${rankList(died)}: no rank runs out of memory under it`,
      );
    }
  }
  if (ruled.failing + ruled.worseOnARank > 0) {
    reasons.push(
      `ruled out: ${formatCount(ruled.failing)} settings that fail ${advice.failures > 0 ? 'more allocations' : 'allocations on a rank'}, ` +
        `${formatCount(ruled.worseOnARank)} predicted worse than the defaults on a rank`,
    );
  }
  return { verdict, reasons };
}
