/**
 * A job through the built CLI (dist/cli.js and dist/job-worker.js, which `pnpm test` builds first):
 * worker threads give what the ranks run one after another give, with progress on stderr; and the
 * SLURM and Kubernetes examples, run as their schedulers would run them (the task index in
 * SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX), shard a job that `merge` puts back together.
 * Skipped when the CLI is not built or the H100 snapshots are absent.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { JobResults } from './job/results';
import { lab } from './lab';
import { Capture } from './test-capture';
import { H100_PRESENT, INFER, TRAIN, torchtitanJob } from './test-job';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', 'dist', 'cli.js');
const examples = join(here, '..', 'examples');
const ready =
  existsSync(cli) && existsSync(join(here, '..', 'dist', 'job-worker.js')) && H100_PRESENT;

/** What `allot-lab ARGS` prints and returns, run as a child process (its status, not a throw). */
async function allotLab(args: string[], cwd: string) {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { cwd });
    return { status: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { status: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function figures(job: JobResults) {
  return job.ranks.map(({ seconds: _seconds, ...rank }) => rank);
}

describe.skipIf(!ready)('a job through the built CLI', () => {
  it('gives the same answer in two worker threads as one rank after another in this process', async () => {
    const root = torchtitanJob([TRAIN, INFER, TRAIN]);
    const threads = await allotLab(['tune', 'memory_snapshot', '--jobs', '2', '--json'], root);
    expect(threads.status).toBe(0);
    // Progress: ranks done of the total, and bytes read (plain lines: stderr is no terminal).
    expect(threads.stderr).toMatch(/ranks: \d done of 3, [\d.]+ of [\d.]+ MiB read/);
    const stdout = new Capture();
    const stderr = new Capture();
    const status = await lab(['tune', 'memory_snapshot', '--json', '--quiet', '--jobs', '1'], {
      stdout,
      stderr,
      cwd: root,
    });
    expect(status).toBe(0);
    const inThread = JSON.parse(stdout.text) as JobResults;
    const inWorkers = JSON.parse(threads.stdout) as JobResults;
    expect(inWorkers.allocConf).toBe(inThread.allocConf);
    expect(figures(inWorkers)).toEqual(figures(inThread));
  });

  it('runs the SLURM array example, one task per shard, and merges the shards', async () => {
    const root = torchtitanJob([TRAIN, TRAIN, TRAIN]);
    const script = join(examples, 'slurm', 'tune-ranks.sbatch');
    for (const task of ['0', '1']) {
      await run('bash', [script, join(root, 'memory_snapshot'), join(root, 'allot')], {
        cwd: root,
        env: {
          ...process.env,
          ALLOT_LAB: `${process.execPath} ${cli}`,
          SLURM_ARRAY_TASK_ID: task,
          SLURM_ARRAY_TASK_COUNT: '2',
          SLURM_CPUS_PER_TASK: '2',
        },
      });
    }
    const shards = ['0', '1'].map((i) => join(root, 'allot', `shard-${i}.json`));
    expect(shards.map((file) => JSON.parse(readFileSync(file, 'utf8')).ranks.length)).toEqual([
      1, 2,
    ]);
    const merged = await allotLab(['merge', ...shards, '--json'], root);
    const whole = await allotLab(['tune', 'memory_snapshot', '--json', '--quiet'], root);
    expect(merged.status).toBe(0);
    const job = JSON.parse(merged.stdout) as JobResults;
    expect(job.allocConf).toBe((JSON.parse(whole.stdout) as JobResults).allocConf);
    expect(job.ranks.map((rank) => rank.rank)).toEqual([0, 1, 2]);
  });

  it('runs the Kubernetes Indexed Job example, one pod per index, and merges the shards', async () => {
    const root = torchtitanJob([TRAIN, TRAIN]);
    const manifest = readFileSync(join(examples, 'kubernetes', 'tune-ranks-job.yaml'), 'utf8');
    const block = /args:\n\s*- \|\n((?:\s{14}.*\n)+)/.exec(manifest);
    expect(block).not.toBeNull();
    const script = block![1]!.replace(/^ {14}/gm, '');
    for (const index of ['0', '1']) {
      await run('sh', ['-c', script], {
        cwd: root,
        env: {
          ...process.env,
          ALLOT_LAB: `${process.execPath} ${cli}`,
          JOB_COMPLETION_INDEX: index,
          SHARDS: '2',
          JOBS: '1',
          SNAPSHOTS: join(root, 'memory_snapshot'),
          RESULTS: join(root, 'allot'),
        },
      });
    }
    const merged = await allotLab(
      ['merge', join(root, 'allot', 'shard-0.json'), join(root, 'allot', 'shard-1.json')],
      root,
    );
    expect(merged.status).toBe(0);
    expect(merged.stdout).toMatch(/^Job: 2 ranks \(numbered by torchtitan, step 10\)/);
    expect(merged.stdout).toMatch(
      /PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:8,expandable_segments:True/,
    );
  });
});
