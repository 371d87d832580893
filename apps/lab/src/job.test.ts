/**
 * A job of four ranks in torchtitan's layout, built from the real H100 snapshots of
 * ../shared/traces/pytorch-h100 (linked into a temporary folder, never committed; skipped when the
 * folder is absent). The tests run the source, so the ranks run one after another in the process
 * (pool.ts); `job-cli.test.ts` runs the built CLI with worker threads.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobResults } from './job/results';
import { lab } from './lab';
import { EXIT_BAD_INPUT, EXIT_OK } from './options';
import { Capture } from './test-capture';
import { INFER, H100_PRESENT as present, TRAIN, TRAIN_EXPANDABLE, torchtitanJob } from './test-job';
import type { JobPageData } from './ui/job-data';

/** `allot-lab ARGV` in this process; no report unless `report`. */
async function run(argv: string[], cwd: string, report = false) {
  const stdout = new Capture();
  const stderr = new Capture();
  const flags = report ? ['--quiet'] : ['--quiet', '--no-report'];
  const status = await lab([...argv, ...flags], { stdout, stderr, cwd });
  return { status, stdout: stdout.text, stderr: stderr.text };
}

/** A rank's figures without the time it took (which differs between runs). */
function figures(job: JobResults) {
  return job.ranks.map(({ seconds: _seconds, ...rank }) => rank);
}

describe.skipIf(!present)('a job of four H100 ranks (torchtitan layout)', () => {
  // Three training ranks and one serving rank: the training ranks are the largest.
  const root = present ? torchtitanJob([TRAIN, INFER, TRAIN, TRAIN]) : '';
  let whole: JobResults;

  it('tune DIR --json: one setting for every rank, the worst rank no worse than with the defaults', async () => {
    const result = await run(['tune', 'memory_snapshot', '--json'], root);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(EXIT_OK);
    whole = JSON.parse(result.stdout) as JobResults;
    expect(typeof whole.allocConf).toBe('string');
    expect(whole.allocConf).not.toBe('');
    expect(whole.ranks.map((rank) => rank.rank)).toEqual([0, 1, 2, 3]);
    expect(whole.ranks[1]!.file).toBe('memory_snapshot/step_10/000001_step_10.pickle.gz');
    expect(whole.input).toMatchObject({ naming: 'torchtitan', step: 10 });
    const worst = Math.max(...whole.ranks.map((rank) => rank.peakReservedBytes!));
    const worstDefaults = Math.max(...whole.ranks.map((rank) => rank.defaultsPeakReservedBytes!));
    expect(worst).toBeLessThan(worstDefaults);
    for (const rank of whole.ranks) {
      expect(rank.peakReservedBytes!).toBeLessThanOrEqual(rank.defaultsPeakReservedBytes!);
      expect(rank.candidatePeakReservedBytes).toHaveLength(whole.candidates.length);
      expect(rank.failures).toBe(0);
    }
    expect(whole.advice!.worst.peakReservedBytes).toBe(worst);
  });

  it('gives each rank the peak that replay THAT_FILE --config ADVICE predicts, to 0.1 %', async () => {
    const advice = whole.allocConf!;
    for (const [file, ranks] of [
      [TRAIN, [0, 2, 3]],
      [INFER, [1]],
    ] as const) {
      const result = await run(
        ['replay', file, '--config', advice, '--allocators', 'caching', '--json'],
        root,
      );
      expect(result.status).toBe(EXIT_OK);
      const workload = JSON.parse(result.stdout).workloads[0];
      const row = workload.rows.find(
        (r: { allocator: string }) => r.allocator === `caching (${advice})`,
      );
      for (const rank of ranks) {
        const ours = whole.ranks[rank]!.peakReservedBytes!;
        expect(Math.abs(ours - row.peakReservedBytes) / row.peakReservedBytes).toBeLessThan(0.001);
      }
    }
  });

  it('merges two shards into the answer one machine gives, and names the ranks a merge lacks', async () => {
    const halves: string[] = [];
    for (const shard of ['0/2', '1/2']) {
      const result = await run(['tune', 'memory_snapshot', '--shard', shard, '--json'], root);
      expect(result.status).toBe(EXIT_OK);
      const path = join(root, `shard-${shard[0]}.json`);
      writeFileSync(path, result.stdout);
      halves.push(path);
      expect((JSON.parse(result.stdout) as JobResults).ranks).toHaveLength(2);
    }
    const merged = await run(['merge', ...halves, '--json'], root);
    expect(merged.status).toBe(EXIT_OK);
    const job = JSON.parse(merged.stdout) as JobResults;
    expect(job.allocConf).toBe(whole.allocConf);
    expect(job.advice).toEqual(whole.advice);
    expect(figures(job)).toEqual(figures(whole));
    const text = await run(['merge', ...halves], root);
    expect(text.stdout).toContain(`PYTORCH_CUDA_ALLOC_CONF=${whole.allocConf}`);
    const half = await run(['merge', halves[0]!], root);
    expect(half.status).toBe(EXIT_BAD_INPUT);
    expect(half.stderr).toMatch(/rank 2: no shard given holds this rank/);
    expect(half.stderr).toMatch(/2 of 4 ranks failed \(rank 2–3\)/);
  });

  it('replay DIR: one row per rank, the worst rank, the spread, and every recording agrees', async () => {
    const result = await run(
      ['replay', 'memory_snapshot', '--config', 'expandable_segments:True'],
      root,
    );
    expect(result.status).toBe(EXIT_OK);
    expect(result.stdout).toMatch(/^Job: 4 ranks \(numbered by torchtitan, step 10\)/);
    expect(result.stdout).toMatch(/Worst rank: 0, predicted peak reserved 13\.6 GiB/);
    expect(result.stdout).toMatch(
      /Spread between ranks: .* \(rank 1: 3\.06 GiB to rank 0: 13\.6 GiB/,
    );
    expect(result.stdout).toMatch(/Every rank's recording agrees with the model/);
    const json = JSON.parse(
      (await run(['replay', 'memory_snapshot', '--json'], root)).stdout,
    ) as JobResults;
    expect(json.ranks.map((rank) => rank.fidelity!.error)).toEqual([0, 0, 0, 0]);
    expect(json.ranks[1]!.fidelity).toMatchObject({ segmentsRecorded: 41, segmentsMatched: 41 });
    expect(json.worst).toEqual({
      rank: 0,
      peakReservedBytes: json.ranks[0]!.replayed!.peakReservedBytes,
    });
  });
});

describe.skipIf(!present)('the settings a job searches', () => {
  it("hold what tune FILE's descent finds on an H100 snapshot: one rank's advice is tune's", async () => {
    const root = torchtitanJob([TRAIN]);
    const job = JSON.parse((await run(['tune', 'memory_snapshot', '--json'], root)).stdout);
    const single = JSON.parse((await run(['tune', TRAIN, '--json'], root)).stdout);
    expect(job.allocConf).toBe(single.allocConf);
    expect(job.ranks[0].peakReservedBytes).toBe(single.best.peakReservedBytes);
    expect(job.ranks[0].defaultsPeakReservedBytes).toBe(single.defaults.peakReservedBytes);
  });
});

describe.skipIf(!present)('a job tuned under a memory limit', () => {
  it('rules out a setting that runs a rank out of memory, and keeps fidelity on the recorded device', async () => {
    const root = torchtitanJob([TRAIN, INFER]);
    const result = await run(['tune', 'memory_snapshot', '--memory', '10GiB', '--json'], root);
    expect(result.status).toBe(EXIT_OK);
    const job = JSON.parse(result.stdout) as JobResults;
    expect(job.advice!.ruledOut.failing).toBeGreaterThan(0);
    expect(job.advice!.failures).toBe(0);
    for (const rank of job.ranks) {
      expect(rank.failures).toBe(0);
      expect(rank.peakReservedBytes!).toBeLessThanOrEqual(10 * 2 ** 30);
      expect(rank.device).toMatchObject({ memory: 10 * 2 ** 30, origin: 'stated' });
      expect(rank.flagged).toBeNull(); // replayed beside the recording on its own 80 GB card
    }
  });
});

describe.skipIf(!present)('the report of a job', () => {
  it("writes the job's page, its results.json, and each rank's own page, linked", async () => {
    const root = torchtitanJob([TRAIN, TRAIN]);
    const result = await run(['replay', 'memory_snapshot', '--out', 'job-report'], root, true);
    expect(result.status).toBe(EXIT_OK);
    const folder = join(root, 'job-report');
    expect(result.stdout).toContain(`Report: ${join(folder, 'index.html')}`);
    // The page's data, which ui/job-page.ts draws (job-page.browser.test.ts opens a job's page).
    const page = readFileSync(join(folder, 'index.html'), 'utf8');
    expect(page).toContain('<main id="report" data-page="job">');
    const data = JSON.parse(
      /<script type="application\/json" id="lab-data">(.*?)<\/script>/s.exec(page)![1]!,
    ) as JobPageData;
    // Two bars per rank in the chart: predicted and recorded.
    expect(data.ranks).toHaveLength(2);
    for (const rank of data.ranks) {
      expect(rank.predictedBytes).toBeGreaterThan(0);
      expect(rank.recordedBytes).toBeGreaterThan(0);
    }
    // The worst rank's own page in place: its timeline and the pool at its peak.
    const worst = (JSON.parse(readFileSync(join(folder, 'results.json'), 'utf8')) as JobResults)
      .worst!.rank;
    expect(data.worst).toBe(worst);
    for (const rank of [0, 1]) {
      expect(data.ranks[rank]).toMatchObject({ rank, page: `ranks/rank-${rank}/index.html` });
      const own = readFileSync(join(folder, 'ranks', `rank-${rank}`, 'index.html'), 'utf8');
      expect(own).toContain(`rank ${rank}: memory_snapshot/step_10/00000${rank}_step_10.pickle.gz`);
    }
    const saved = JSON.parse(readFileSync(join(folder, 'results.json'), 'utf8')) as JobResults;
    expect(saved.ranks.map((rank) => rank.report)).toEqual([
      'ranks/rank-0/index.html',
      'ranks/rank-1/index.html',
    ]);
  });
});

describe.skipIf(!present)(
  'a job with a damaged rank, and one recorded with different settings',
  () => {
    it('fails the damaged rank with its one-line error, goes on with the others, exit 2 naming it', async () => {
      const root = torchtitanJob([TRAIN, TRAIN]);
      const folder = join(root, 'memory_snapshot', 'step_10');
      writeFileSync(
        join(folder, '000002_step_10.pickle.gz'),
        readFileSync(TRAIN).subarray(0, 50_000),
      );
      writeFileSync(join(folder, '000003_step_10.pickle.gz'), 'not a snapshot\n');
      const result = await run(['replay', 'memory_snapshot', '--json'], root);
      expect(result.status).toBe(EXIT_BAD_INPUT);
      const job = JSON.parse(result.stdout) as JobResults;
      expect(job.ranks.map((rank) => rank.rank)).toEqual([0, 1]);
      expect(job.failed.map((f) => f.rank)).toEqual([2, 3]);
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatch(
        /^allot-lab: rank 2: .*000002_step_10\.pickle\.gz.*(truncated|gzip)/,
      );
      expect(lines[1]).toMatch(/^allot-lab: rank 3: .*000003_step_10\.pickle\.gz/);
      expect(lines[2]).toBe(
        "allot-lab: 2 of 4 ranks failed (rank 2–3); the others' figures are above (exit status 2)",
      );
    });

    it('reports ranks recorded with different settings, and tunes them as one only with --force', async () => {
      const root = torchtitanJob([TRAIN, TRAIN_EXPANDABLE]);
      const mixed = await run(['tune', 'memory_snapshot'], root);
      expect(mixed.status).toBe(EXIT_BAD_INPUT);
      expect(mixed.stdout).toMatch(
        /Ranks recorded with different settings: \(defaults\) on ranks 0; expandable_segments:True on ranks 1/,
      );
      expect(mixed.stdout).toMatch(/Not tuned as one job/);
      expect(mixed.stderr).toMatch(/recorded with 2 different settings.*--force tunes them as one/);
      const forced = await run(['tune', 'memory_snapshot', '--force', '--json'], root);
      expect(forced.status).toBe(EXIT_OK);
      const job = JSON.parse(forced.stdout) as JobResults;
      expect(job.forced).toBe(true);
      expect(job.allocConf).toBe('roundup_power2_divisions:8,expandable_segments:True');
    });
  },
);
