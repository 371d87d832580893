/**
 * The tuner's advice in words: one function for `tune` (its text and `--json`), the report's
 * diagnosis (and the line under `replay`'s table) and the web app's tuner, so the same search gives
 * the same setting, the same saving and the same reason everywhere.
 *
 * ```
 *  the card holds less than the peak live bytes  ─► card-too-small:       no setting (null)
 *  the best setting tried still fails             ─► every-setting-fails:  no setting (null)
 *  the best fails fewer than the defaults         ─► fewer-failures:       the setting
 *  the best is predicted lower, same start        ─► saves:                the setting
 *  … of the other segment regime                  ─► like-for-like:        the setting, its saving
 *                                                    from the blocks live when the window began
 *  a lower one only by starting without the cache ─► start-cache-only:     the defaults ('')
 *  nothing lower (or within 1 %)                  ─► defaults-best:        the defaults ('')
 * ```
 *
 * A setting of the other segment regime than the recording's cannot restore the cache PyTorch held
 * before the window, so its replay starts lighter: the tuner's table sets it against the defaults
 * restoring that cache, the advice against the defaults from the same start (`tune.ts`,
 * `likeForLike`). The reason says which, and gives the other figure, so the numbers add up beside
 * the table.
 *
 * On a state dump every figure is an estimate (`dump-estimate.ts`): the words say `Estimated`, and
 * the reason ends with what the estimate assumes.
 */
import { formatBytes, formatCount, formatPercent, settingName } from '../units';
import { type DeviceModel, describeDevice } from './device';
import { recommendedRun, searchedKnobs } from './registry';
import { type PoolRun, TIE_TOLERANCE, type TuneResult } from './tune';

/** Why the advice is what it is (see the module comment). */
export type AdviceReason =
  | 'saves'
  | 'like-for-like'
  | 'start-cache-only'
  | 'defaults-best'
  | 'fewer-failures'
  | 'every-setting-fails'
  | 'card-too-small';

/** The recommendation of a search, in figures and in words. */
export interface Advice {
  /**
   * The `PYTORCH_CUDA_ALLOC_CONF` to set: '' to keep PyTorch's defaults, null when no setting can be
   * advised (the card is too small for the recording under every setting).
   */
  readonly config: string | null;
  readonly reason: AdviceReason;
  /** The advice in a line: `PYTORCH_CUDA_ALLOC_CONF=…` to copy, or what to do instead. */
  readonly headline: string;
  /** Its figures in a sentence: the predicted peak, against the defaults, and the saving. */
  readonly summary: string;
  /** Why, in a sentence: what the figures are measured from, what the search ruled out. */
  readonly because: string;
  /** Bytes: peak reserved under the advised setting (the defaults' when it is '' or null). */
  readonly peakReservedBytes: number;
  /** Bytes: the defaults' peak reserved the saving is measured against (from the same start). */
  readonly defaultsPeakReservedBytes: number;
  /** Bytes: `defaultsPeakReservedBytes − peakReservedBytes` (0 when the advice is the defaults). */
  readonly savingBytes: number;
  /** The saving as a fraction of `defaultsPeakReservedBytes`. */
  readonly savingFraction: number;
  /** Failed allocations under the advised setting (the fewest of any, when config is null). */
  readonly failures: number;
  /** Failed allocations with the defaults. */
  readonly defaultsFailures: number;
  /** The device the search ran on, and where its figures came from. */
  readonly device: string;
  readonly settingsTried: number;
  /** The knobs the search tried, in words. */
  readonly searched: string;
  /** Set when most of the saving comes from the device figures (it shrinks without a limit). */
  readonly deviceDependent?: string;
  /**
   * Set on a state dump: every figure is an estimate (`dump-estimate.ts`), which the words say with
   * what it assumes.
   */
  readonly estimate?: true;
}

/** Bytes a pool may reserve on `device`: its memory, times its fraction. */
function capOf(device: DeviceModel & { readonly memory: number }): number {
  return device.memory * (device.fraction ?? 1);
}

/**
 * Why no setting can run a recording whose peak live bytes are `peakLiveBytes` on `device`, said
 * of `subject` (`--memory 4.00 GiB`, `The card's 4.00 GiB`) and `whose` peak: null when the card
 * holds them. The command line refuses with it; the report and the web app advise nothing with it.
 */
export function cardTooSmall(
  peakLiveBytes: number,
  device: DeviceModel & { readonly memory: number },
  subject = `The card's ${formatBytes(capOf(device))}`,
  whose = "the recording's",
): string | null {
  if (capOf(device) >= peakLiveBytes) return null;
  const share =
    device.fraction === null
      ? ''
      : ` (${formatBytes(device.memory)} × fraction ${device.fraction})`;
  return (
    `${subject}${share} is less than ${whose} peak live bytes (${formatBytes(peakLiveBytes)}): ` +
    'every setting would fail; give the GPU memory, at least the peak'
  );
}

/** The lowest peak among `runs` without more failures than the fewest, or undefined. */
function lowestOf(runs: readonly PoolRun[], except: PoolRun): PoolRun | undefined {
  const fewest = Math.min(...runs.map((run) => run.failures));
  return runs
    .filter((run) => run !== except && run.failures === fewest)
    .reduce<PoolRun | undefined>(
      (a, b) => (a === undefined || b.peakReservedBytes < a.peakReservedBytes ? b : a),
      undefined,
    );
}

/** The words and figures that depend on why (see {@link adviceOf}). */
type Words = Pick<
  Advice,
  | 'config'
  | 'reason'
  | 'headline'
  | 'summary'
  | 'because'
  | 'peakReservedBytes'
  | 'defaultsPeakReservedBytes'
  | 'savingBytes'
  | 'failures'
>;

const KEEP = "Keep PYTORCH_CUDA_ALLOC_CONF unset: PyTorch's defaults are the best setting found";

function wordsOf(result: TuneResult): Words {
  const { defaults, tried } = result;
  const best = recommendedRun(result);
  // A state dump's figures are estimates, said so with their assumption (`dump-estimate.ts`).
  const predicted = result.estimate !== undefined ? 'Estimated' : 'Predicted';
  const assumed = result.estimate !== undefined ? ` ${result.estimate.assumes}` : '';
  const peak = (bytes: number) => `${predicted} peak reserved ${formatBytes(bytes)}.`;
  const keep = (reason: AdviceReason, because: string): Words => ({
    config: '',
    reason,
    headline: KEEP,
    summary: peak(defaults.peakReservedBytes),
    because,
    peakReservedBytes: defaults.peakReservedBytes,
    defaultsPeakReservedBytes: defaults.peakReservedBytes,
    savingBytes: 0,
    failures: defaults.failures,
  });
  // A dump with no live block: no setting holds nothing in less (`tune` refuses it outright).
  if (result.estimate !== undefined && result.estimate.blocks === 0) {
    return keep(
      'defaults-best',
      'No block is live in the dump: every reserved byte is free, so there is nothing to estimate under another setting.',
    );
  }
  const tooSmall = cardTooSmall(result.peakLiveBytes, result.device);
  if (tooSmall !== null) {
    return {
      config: null,
      reason: 'card-too-small',
      headline: 'No setting to advise: every setting would fail on this card',
      summary: `${tooSmall}.`,
      because: 'No setting lets a pool hold more bytes live than the card has, so none is advised.',
      peakReservedBytes: defaults.peakReservedBytes,
      defaultsPeakReservedBytes: defaults.peakReservedBytes,
      savingBytes: 0,
      failures: best.failures,
    };
  }
  if (best.failures > 0) {
    return {
      config: null,
      reason: 'every-setting-fails',
      headline: 'No setting to advise: every setting tried fails allocations on this card',
      summary:
        `The fewest failed allocations, ${formatCount(best.failures)}, are with ${settingName(best.config)}` +
        `; with the defaults, ${formatCount(defaults.failures)}.`,
      because:
        `The card's ${formatBytes(capOf(result.device))} holds the peak live bytes (${formatBytes(result.peakLiveBytes)}) ` +
        `but not the rounding and fragmentation around them under any setting tried: it needs more memory, or fewer bytes live at the peak.${assumed}`,
      peakReservedBytes: defaults.peakReservedBytes,
      defaultsPeakReservedBytes: defaults.peakReservedBytes,
      savingBytes: 0,
      failures: best.failures,
    };
  }
  const like = result.likeForLike;
  if (best === defaults) {
    if (like !== undefined) {
      return keep(
        'start-cache-only',
        `${like.config} peaks lower, at ${formatBytes(like.bestPeakReservedBytes)}, only because it cannot restore ` +
          `the ${formatBytes(like.startCacheBytes)} PyTorch held cached before the recording began; started like for like, ` +
          `from the blocks live then, the defaults reach ${formatBytes(like.defaultsPeakReservedBytes)}, which it does not beat.`,
      );
    }
    const lowest = lowestOf(tried, defaults);
    return keep(
      'defaults-best',
      (lowest !== undefined && lowest.peakReservedBytes < defaults.peakReservedBytes
        ? `Of the ${formatCount(tried.length)} settings tried, the lowest, ${lowest.config} at ${formatBytes(lowest.peakReservedBytes)}, ` +
          `is within ${formatPercent(TIE_TOLERANCE, 0)} of the defaults, and within ${formatPercent(TIE_TOLERANCE, 0)} the fewest keys win.`
        : `Of the ${formatCount(tried.length)} settings tried, none is ${predicted.toLowerCase()} below the defaults.`) +
        assumed,
    );
  }
  const against = like?.defaultsPeakReservedBytes ?? defaults.peakReservedBytes;
  const saving = against - best.peakReservedBytes;
  const words = {
    config: best.config,
    headline: `PYTORCH_CUDA_ALLOC_CONF=${best.config}`,
    peakReservedBytes: best.peakReservedBytes,
    defaultsPeakReservedBytes: against,
    savingBytes: saving,
    failures: best.failures,
  };
  if (defaults.failures > 0) {
    return {
      ...words,
      reason: 'fewer-failures',
      summary:
        `No allocation fails, where ${formatCount(defaults.failures)} fail with the defaults; ${predicted.toLowerCase()} peak reserved ` +
        `${formatBytes(best.peakReservedBytes)} (the defaults: ${formatBytes(against)}).`,
      because:
        'Failed allocations count first: a setting under which the recording runs on this card beats one under which it does not, whatever their peaks.' +
        assumed,
    };
  }
  const summary =
    `${predicted} peak reserved ${formatBytes(best.peakReservedBytes)} instead of ${formatBytes(against)} with the defaults: ` +
    `${formatBytes(saving)} saved (${formatPercent(against > 0 ? saving / against : 0)}).`;
  if (like !== undefined) {
    return {
      ...words,
      reason: 'like-for-like',
      summary,
      because:
        `Like for like: ${best.config} cannot restore the ${formatBytes(like.startCacheBytes)} PyTorch held cached before the ` +
        `recording began, so both start from the blocks live then; restoring that cache, the defaults reach ${formatBytes(defaults.peakReservedBytes)}.`,
    };
  }
  return {
    ...words,
    reason: 'saves',
    summary,
    because:
      `Of the ${formatCount(tried.length)} settings tried, the lowest ${predicted.toLowerCase()} peak (within ${formatPercent(TIE_TOLERANCE, 0)} of it, ` +
      `the fewest keys), it and the defaults ${result.estimate !== undefined ? 'estimated from the same empty pool' : 'replayed from the same start'}.${assumed}`,
  };
}

/** The advice of a search (see the module comment). */
export function adviceOf(result: TuneResult): Advice {
  const { fraction, origin } = describeDevice(result);
  const words = wordsOf(result);
  const advised = words.config !== null && words.config !== '';
  return {
    ...words,
    savingFraction:
      words.defaultsPeakReservedBytes > 0 ? words.savingBytes / words.defaultsPeakReservedBytes : 0,
    defaultsFailures: result.defaults.failures,
    device: `${formatBytes(result.device.memory)} GPU, ${fraction} (${origin})`,
    settingsTried: result.tried.length,
    searched: searchedKnobs(result.device.fraction !== null),
    ...(advised && words.savingBytes > 0 && result.unlimitedSavingBytes < words.savingBytes / 2
      ? {
          deviceDependent: `this saving comes from the device figures: without a memory limit it is ${formatBytes(result.unlimitedSavingBytes)}`,
        }
      : {}),
    ...(result.estimate !== undefined ? { estimate: true as const } : {}),
  };
}

/** The advice as one paragraph: the report's, and the line under `replay`'s table. */
export function adviceParagraph(advice: Advice): string {
  const recommended = advice.config !== null && advice.config !== '' ? 'Recommended: ' : '';
  return (
    `${recommended}${advice.headline}. ${advice.summary} ${advice.because} Searched: ${advice.searched}. ` +
    `Device: ${advice.device}${advice.deviceDependent !== undefined ? `; ${advice.deviceDependent}` : ''}.`
  );
}
