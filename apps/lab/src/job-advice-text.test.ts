/**
 * The job's setting in words (job/advice-text.ts), the one wording `tune DIR`, its page and the web
 * app print: each verdict, and reasons whose figures are the advice's own.
 */
import { describe, expect, it } from 'vitest';
import { adviseJob, type RankSettings } from './job/advice';
import { type JobRankNote, jobAdviceText } from './job/advice-text';

const MIB = 2 ** 20;
const candidates = ['', 'expandable_segments:True', 'max_split_size_mb:64'];

function rank(n: number, peaksMiB: number[], failures = peaksMiB.map(() => 0)): RankSettings {
  return {
    rank: n,
    settings: peaksMiB.map((peak, i) => ({
      config: candidates[i]!,
      peakReservedBytes: peak * MIB,
      failures: failures[i]!,
      segmentCalls: 1,
    })),
  };
}

function textOf(ranks: RankSettings[], died: number[] = []) {
  const advice = adviseJob(candidates, ranks)!;
  const notes: JobRankNote[] = ranks.map((r) => ({
    rank: r.rank,
    defaultsFailures: r.settings[0]!.failures,
    died: died.includes(r.rank),
  }));
  return jobAdviceText(advice, notes);
}

describe("the job's setting in words", () => {
  it('names the setting, and the worst rank against the worst under the defaults, the saving adding up', () => {
    const text = textOf([rank(0, [1000, 800, 900]), rank(1, [500, 400, 450])], [1]);
    expect(text.verdict).toBe('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True');
    expect(text.reasons).toEqual([
      'worst rank 0: predicted peak reserved 800 MiB, against 1000 MiB on rank 0 with the defaults: 200 MiB saved (20.0 %)',
      'no rank is predicted worse than with the defaults',
      'it serves the requests that failed on rank 1: no rank runs out of memory under it',
    ]);
  });

  it('says to keep the defaults, and why, when nothing is predicted better', () => {
    const text = textOf([rank(2, [100, 120, 110])]);
    expect(text.verdict).toMatch(/^PyTorch's defaults are already the best setting found/);
    expect(text.reasons[0]).toBe('worst rank 2: predicted peak reserved 100 MiB');
    expect(text.reasons[1]).toMatch(
      /^ruled out: 0 settings .*, 2 predicted worse than the defaults/,
    );
  });

  it('speaks of the failures a setting avoids, not of a saving, when the defaults fail on a rank', () => {
    const text = textOf([rank(0, [100, 120, 130], [3, 0, 2]), rank(1, [90, 95, 80], [1, 0, 0])]);
    expect(text.verdict).toBe('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True');
    expect(text.reasons[0]).toBe(
      'the defaults fail 4 allocations on ranks 0–1; this setting fails none, the worst rank 0 at 120 MiB peak reserved',
    );
    expect(text.reasons.join('\n')).not.toMatch(/saved/);
  });

  it('says the card is too small when every setting fails, with the fewest failures', () => {
    const text = textOf([rank(0, [100, 100, 100], [5, 2, 4])]);
    expect(text.verdict).toMatch(
      /^Every setting searched fails allocations .*too small for the job/,
    );
    expect(text.reasons[0]).toBe(
      'the fewest failures: 2 in all with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, against 5 with the defaults',
    );
    expect(text.reasons.join('\n')).not.toMatch(/saved|no rank runs out of memory/);
  });
});
