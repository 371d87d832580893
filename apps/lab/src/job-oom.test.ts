/**
 * A job whose ranks died: two ranks whose recordings end in an out-of-memory error of a different
 * cause (fragmentation, avoided by expandable segments or a small max_split_size_mb; an oversize
 * block split, avoided by max_split_size_mb only) and one that did not. The job names the ranks that
 * died, and its one setting serves both failed requests. In a folder `allot-lab record` wrote, a
 * rank that died a step before the others is read from its out-of-memory snapshot.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deadRanksJob, fragmentation, Recording } from '../test/oom-recordings';
import type { JobResults } from './job/results';
import { lab } from './lab';
import { Capture } from './test-capture';

const root = mkdtempSync(join(tmpdir(), 'allot-job-oom-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const folder = join(root, 'ranks');
mkdirSync(folder);
for (const [name, text] of Object.entries(deadRanksJob())) writeFileSync(join(folder, name), text);

async function run(...argv: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const status = await lab([...argv, '--quiet', '--no-report'], { stdout, stderr, cwd: root });
  return { status, stdout: stdout.text, stderr: stderr.text };
}

describe('a job whose ranks ran out of memory', () => {
  it('names the ranks that died, and the one setting that saves them all', async () => {
    const text = await run('tune', 'ranks');
    expect(text.stdout).toMatch(/Ranks that ran out of memory: 0–1 /);
    expect(text.stdout).toMatch(/rank 0: a 40\.0 MiB request at entry 11, a 90\.0 MiB wall/);
    expect(text.stdout).toMatch(/rank 1: a 100 MiB request at entry 5, a 135 MiB wall/);
    expect(text.stdout).toMatch(/it serves the requests that failed on ranks 0–1/);
    const json = await run('tune', 'ranks', '--json');
    const job = JSON.parse(json.stdout) as JobResults & { allocConf: string };
    // Only a small max_split_size_mb serves both: expandable segments fail rank 1's request.
    expect(job.allocConf).toMatch(/^max_split_size_mb:(20|32|64)$/);
    expect(job.ranks.map((rank) => rank.oom?.event ?? null)).toEqual([11, 5, null]);
    for (const rank of job.ranks) expect(rank.failures).toBe(0);
    // Each rank checked on its own: the advice serves its failed request at its wall.
    for (const [rank, wall] of [
      [0, 90],
      [1, 135],
    ] as const) {
      const replay = await run(
        'replay',
        join('ranks', `rank${rank}_snapshot.json`),
        '--allocators',
        'caching',
        '--config',
        job.allocConf,
        '--memory',
        `${wall}MiB`,
        '--json',
      );
      const rows = JSON.parse(replay.stdout).workloads[0].rows as {
        config?: string;
        failures: number;
        recordedOomsFailed?: number;
      }[];
      const row = rows.find((r) => r.config === job.allocConf)!;
      expect(row.failures).toBe(0);
      expect(row.recordedOomsFailed).toBe(0);
    }
  });

  it("reads a record folder's rank that died a step before the others from its OOM snapshot", async () => {
    const record = join(root, 'record');
    mkdirSync(record);
    const lived = new Recording().segment(0, 20).alloc(0, 20).free(0, 20).snapshot();
    writeFileSync(join(record, 'rank0_step2.pickle'), lived);
    writeFileSync(join(record, 'rank0_step4_exit.pickle'), lived);
    writeFileSync(join(record, 'rank1_step2.pickle'), lived);
    writeFileSync(join(record, 'rank1_step3_oom.pickle'), fragmentation().snapshot());
    const text = await run('replay', 'record');
    expect(text.stdout).toMatch(/^Job: 2 ranks \(numbered by allot-lab\); 2 replayed, 0 failed\n/);
    expect(text.stdout).toContain(
      "  each rank's newest snapshot, its steps counted by its own process (--step N reads step N of every rank): " +
        'rank 0 at step 4; rank 1 at step 3, its out-of-memory snapshot: it died\n',
    );
    expect(text.stdout).toMatch(/Ranks that ran out of memory: 1 /);
    const json = JSON.parse((await run('replay', 'record', '--json')).stdout) as JobResults;
    expect(json.ranks.map((rank) => [rank.rank, rank.file, rank.oom?.event ?? null])).toEqual([
      [0, join('record', 'rank0_step4_exit.pickle'), null],
      [1, join('record', 'rank1_step3_oom.pickle'), 11],
    ]);
  });
});
