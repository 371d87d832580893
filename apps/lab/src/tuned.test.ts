/**
 * One tuner, one answer: the caching-tuned row, the report's action, the terminal and `--json` (with
 * or without the report) all give the setting `allot-lab tune` recommends.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { snapshotWithFrames } from '../test/snapshot-with-frames';
import { lab } from './lab';
import { EXIT_OK } from './options';
import { Capture } from './test-capture';

async function run(argv: string[], cwd?: string) {
  const stdout = new Capture();
  const stderr = new Capture();
  const status = await lab(argv, { stdout, stderr, ...(cwd ? { cwd } : {}) });
  return { status, stdout: stdout.text, stderr: stderr.text };
}

interface Summary {
  workloads: {
    rows: { allocator: string; config?: string; note?: string }[];
    explain: { diagnosis: { action: string; advice?: string }; advice?: { config: string } };
  }[];
}

const TRAINING = ['--quick', '--workloads', 'training', '--quiet'];

describe('caching-tuned', () => {
  it('replays the setting tune recommends, whichever knobs it sets, and says what was searched', async () => {
    const tuned = await run(['tune', ...TRAINING, '--json']);
    expect(tuned.status).toBe(EXIT_OK);
    const conf = (JSON.parse(tuned.stdout) as { allocConf: string }).allocConf;
    expect(conf).not.toBe('');
    expect(conf).not.toMatch(/^max_split_size_mb:\d+$/); // not the one knob it used to search
    const lab = await run([...TRAINING, '--allocators', 'caching,caching-tuned', '--no-report']);
    expect(lab.status).toBe(EXIT_OK);
    // The row, named with its setting, in the table; the recommendation and what was searched.
    expect(lab.stdout).toContain(`caching-tuned (${conf})`);
    expect(lab.stdout).toContain(`Recommended: PYTORCH_CUDA_ALLOC_CONF=${conf}. Predicted`);
    expect(lab.stdout).toMatch(/max_split_size_mb.*roundup_power2_divisions.*expandable_segments/);
    const json = JSON.parse(
      (await run([...TRAINING, '--allocators', 'caching,caching-tuned', '--no-report', '--json']))
        .stdout,
    ) as Summary;
    const [workload] = json.workloads;
    expect(workload!.rows.find((row) => row.allocator === 'caching-tuned')!.config).toBe(conf);
    expect(workload!.explain.advice!.config).toBe(conf);
    expect(workload!.explain.diagnosis.action).toContain(`PYTORCH_CUDA_ALLOC_CONF=${conf} `);
  });

  it('gives a snapshot the same --json with the report as without it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-lab-tuned-'));
    writeFileSync(
      join(dir, 'weights.json'),
      JSON.stringify(snapshotWithFrames({ startingState: true })),
    );
    const answer = async (extra: string[]) => {
      const result = await run(['replay', 'weights.json', '--json', '--quiet', ...extra], dir);
      expect(result.status).toBe(EXIT_OK);
      const [workload] = (JSON.parse(result.stdout) as Summary).workloads;
      return {
        explain: workload!.explain,
        rows: workload!.rows.map(({ allocator, config, note }) => ({ allocator, config, note })),
      };
    };
    const withReport = await answer([]);
    expect(withReport.explain.advice).toBeDefined();
    expect(await answer(['--no-report'])).toEqual(withReport);
  });
});

describe('without caching-tuned', () => {
  it('runs no search: neither the report nor --json recommends, and both agree', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-lab-untuned-'));
    writeFileSync(join(dir, 'weights.json'), JSON.stringify(snapshotWithFrames()));
    const answers = [];
    for (const extra of [[], ['--no-report']]) {
      const argv = ['replay', 'weights.json', '--allocators', 'caching', '--json', '--quiet'];
      const result = await run([...argv, ...extra], dir);
      expect(result.status).toBe(EXIT_OK);
      answers.push((JSON.parse(result.stdout) as Summary).workloads[0]!.explain);
    }
    expect(answers[0]!.advice).toBeUndefined();
    expect(answers[1]).toEqual(answers[0]);
  });
});
