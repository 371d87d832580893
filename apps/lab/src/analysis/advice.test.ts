import { DEFAULT_SETTINGS } from '@allot/caching';
import { describe, expect, it } from 'vitest';
import { formatBytes } from '../units';
import { type Advice, adviceOf, adviceParagraph, cardTooSmall } from './advice';
import type { LikeForLike, PoolRun, TuneResult } from './tune';

const GIB = 2 ** 30;
const MIB = 2 ** 20;

const run = (config: string, peak: number, failures = 0): PoolRun => ({
  config,
  settings: DEFAULT_SETTINGS,
  peakReservedBytes: peak,
  peakLiveBytes: GIB,
  failures,
  segments: { acquired: 10, released: 0, grown: 0 },
});

/** A search whose defaults and best are given, on an 80 GiB card unless said otherwise. */
function search(
  defaults: PoolRun,
  best: PoolRun,
  more: Partial<TuneResult> = {},
  tried: readonly PoolRun[] = [defaults, best],
): TuneResult {
  const against = more.likeForLike?.defaultsPeakReservedBytes ?? defaults.peakReservedBytes;
  return {
    device: { memory: 80 * GIB, fraction: null },
    origin: 'assumed',
    peakLiveBytes: GIB,
    defaults,
    best,
    tried,
    savingBytes: against - best.peakReservedBytes,
    savingFraction: (against - best.peakReservedBytes) / against,
    unlimitedSavingBytes: against - best.peakReservedBytes,
    ...more,
  };
}

/** Every advice's figures add up, whatever its reason. */
function addsUp(advice: Advice): void {
  expect(advice.savingBytes).toBe(advice.defaultsPeakReservedBytes - advice.peakReservedBytes);
  if (advice.config === '' || advice.config === null) expect(advice.savingBytes).toBe(0);
}

describe('the advice of a search, in figures and words', () => {
  it('measures the saving like for like, and gives the table’s figure in the reason', () => {
    // The table: expandable_segments:True at 2.01 GiB against the defaults' 2.45 GiB (−18 %);
    // from the same start (the blocks live then) the defaults reach 2.35 GiB.
    const defaults = run('', 2.45 * GIB);
    const best = run('expandable_segments:True', 2.01 * GIB);
    const like: LikeForLike = {
      config: best.config,
      defaultsPeakReservedBytes: 2.35 * GIB,
      bestPeakReservedBytes: best.peakReservedBytes,
      savingBytes: 0.34 * GIB,
      startCacheBytes: 100 * MIB,
    };
    const advice = adviceOf(search(defaults, best, { likeForLike: like }));
    addsUp(advice);
    expect(advice.config).toBe('expandable_segments:True');
    expect(advice.reason).toBe('like-for-like');
    expect(advice.defaultsPeakReservedBytes).toBe(2.35 * GIB);
    expect(advice.summary).toBe(
      `Predicted peak reserved 2.01 GiB instead of 2.35 GiB with the defaults: ${formatBytes(0.34 * GIB)} saved (14.5 %).`,
    );
    expect(advice.because).toMatch(
      /^Like for like: .* restoring that cache, the defaults reach 2\.45 GiB\.$/,
    );
    expect(adviceParagraph(advice)).toContain(advice.because);
  });

  it('keeps the defaults when a setting is lower only by starting without the cache, and says so', () => {
    const defaults = run('', 2.45 * GIB);
    const lower = run('expandable_segments:True', 2.2 * GIB);
    const like: LikeForLike = {
      config: lower.config,
      defaultsPeakReservedBytes: 2.1 * GIB,
      bestPeakReservedBytes: lower.peakReservedBytes,
      savingBytes: -0.1 * GIB,
      startCacheBytes: 350 * MIB,
    };
    const advice = adviceOf(search(defaults, defaults, { likeForLike: like }, [defaults, lower]));
    addsUp(advice);
    expect(advice.config).toBe('');
    expect(advice.reason).toBe('start-cache-only');
    expect(advice.headline).toMatch(/^Keep PYTORCH_CUDA_ALLOC_CONF unset/);
    expect(advice.because).toContain('expandable_segments:True peaks lower, at 2.20 GiB');
    expect(advice.because).toContain('the defaults reach 2.10 GiB');
  });

  it('says why the defaults stay: nothing lower, or the lowest within 1 %', () => {
    const defaults = run('', 1000 * MIB);
    const none = adviceOf(search(defaults, defaults, {}, [defaults, run('a:1', 1200 * MIB)]));
    expect(none.reason).toBe('defaults-best');
    expect(none.because).toBe('Of the 2 settings tried, none is predicted below the defaults.');
    const close = adviceOf(search(defaults, defaults, {}, [defaults, run('a:1', 995 * MIB)]));
    expect(close.because).toMatch(/the lowest, a:1 at 995 MiB, is within 1 % of the defaults/);
    addsUp(close);
  });

  it('names a setting that saves from the same start', () => {
    const advice = adviceOf(search(run('', 1000 * MIB), run('max_split_size_mb:128', 800 * MIB)));
    addsUp(advice);
    expect(advice.reason).toBe('saves');
    expect(advice.headline).toBe('PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128');
    expect(advice.savingFraction).toBeCloseTo(0.2, 10);
  });

  it('puts failed allocations first, and advises nothing when every setting fails', () => {
    const fewer = adviceOf(
      search(run('', 900 * MIB, 3), run('expandable_segments:True', 950 * MIB)),
    );
    expect(fewer.reason).toBe('fewer-failures');
    expect(fewer.config).toBe('expandable_segments:True');
    expect(fewer.summary).toMatch(/^No allocation fails, where 3 fail with the defaults/);
    const all = adviceOf(search(run('', 900 * MIB, 3), run('a:1', 950 * MIB, 1)));
    expect(all.config).toBeNull();
    expect(all.reason).toBe('every-setting-fails');
    expect(all.summary).toBe(
      'The fewest failed allocations, 1, are with a:1; with the defaults, 3.',
    );
    addsUp(all);
  });

  it('advises nothing on a card smaller than the peak live bytes, in the words the command line refuses with', () => {
    const card = { memory: 4 * GIB, fraction: null };
    const result = search(
      run('', 4 * GIB, 639),
      run('max_split_size_mb:32', 4 * GIB - 4 * MIB, 639),
      {
        device: card,
        origin: 'stated',
        peakLiveBytes: 5.47 * GIB,
      },
    );
    const advice = adviceOf(result);
    expect(advice.config).toBeNull();
    expect(advice.reason).toBe('card-too-small');
    expect(advice.savingBytes).toBe(0);
    const words = cardTooSmall(5.47 * GIB, card);
    expect(words).toBe(
      "The card's 4.00 GiB is less than the recording's peak live bytes (5.47 GiB): every setting would fail; give the GPU memory, at least the peak",
    );
    expect(advice.summary).toBe(`${words}.`);
    expect(cardTooSmall(5.47 * GIB, { memory: 8 * GIB, fraction: 0.5 })).toMatch(
      /^The card's 4\.00 GiB \(8\.00 GiB × fraction 0\.5\) is less than/,
    );
    expect(cardTooSmall(4 * GIB, card)).toBeNull();
  });
});
