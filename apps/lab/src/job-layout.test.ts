import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SETTINGS, formatAllocConf, parseAllocConf } from '@allot/caching';
import { describe, expect, it } from 'vitest';
import { adviseJob } from './job/advice';
import { jobCandidates } from './job/candidates';
import { expandGlob, namePattern } from './job/glob';
import { findRanks, isJob, nameOf, shardOf } from './job/layout';
import { rankList } from './job/rank-name';
import { UsageError } from './options';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'allot-job-'));
}

function touch(root: string, ...paths: string[]): void {
  for (const path of paths) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), 'x');
  }
}

function usageError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  throw new Error('expected a UsageError');
}

describe('a job: rank and step from the names frameworks give', () => {
  it("reads torchtitan's and Megatron-Bridge's names, else a rank in the name", () => {
    expect(nameOf('/o/memory_snapshot/step_20/000007_step_20.pickle')).toEqual({
      rank: 7,
      step: 20,
      oom: false,
      naming: 'torchtitan',
    });
    expect(nameOf('/o/memory_snapshot/iteration_10/rank3_memory_snapshot.pickle')).toMatchObject({
      rank: 3,
      step: 10,
      oom: false,
      naming: 'torchtitan',
    });
    expect(
      nameOf('/o/memory_snapshot/iteration_9_exit/rank3_memory_snapshot.pickle'),
    ).toMatchObject({ rank: 3, step: 9, oom: true });
    expect(nameOf('/nemo_run/snapshot_12.pickle')).toMatchObject({ rank: 12, naming: 'megatron' });
    expect(nameOf('/r/memory.snapshot_rank-5.pickle')).toMatchObject({ rank: 5, oom: false });
    expect(nameOf('/r/snapshot_oom_rank-4.pickle')).toMatchObject({ rank: 4, oom: true });
    expect(nameOf('/r/trace-rank_2.json.gz')).toMatchObject({
      rank: 2,
      naming: 'rank in the name',
    });
    expect(nameOf('/r/train-default.pickle.gz').rank).toBeNull();
  });

  it('reads the names allot-lab record gives: a rank, a step, and an exit or OOM mark', () => {
    expect(nameOf('/job/rank3_step120.pickle')).toEqual({
      rank: 3,
      step: 120,
      oom: false,
      exit: false,
      restart: 0,
      naming: 'allot-lab',
    });
    expect(nameOf('/job/rank0_step7_exit.pickle')).toMatchObject({
      rank: 0,
      step: 7,
      oom: false,
      exit: true,
    });
    expect(nameOf('/job/rank1_step8847_oom.pickle')).toMatchObject({
      rank: 1,
      step: 8847,
      oom: true,
      exit: false,
    });
    // A name under way (written, then renamed when complete) is not a trace's name.
    expect(nameOf('/job/rank1_step9.pickle.tmp').naming).not.toBe('allot-lab');
  });

  it("reads verl's, lmms-engine's and Megatron-LM's names, and their OOM snapshots", () => {
    expect(nameOf('/p/step30/torch_memory_rank5_pid4242.pickle')).toEqual({
      rank: 5,
      step: 30,
      oom: false,
      naming: 'verl',
    });
    expect(nameOf('/p/steps10-19/torch_memory_rank1_pid7.pickle')).toMatchObject({
      rank: 1,
      step: 19,
      oom: false,
    });
    expect(nameOf('/p/step4/post_update_step4_rank2_pid9.pickle')).toMatchObject({
      rank: 2,
      step: 4,
      naming: 'verl',
    });
    expect(
      nameOf('/p/oom_20261127-101500-123456/torch_memory_oom_rank3_pid11.pickle'),
    ).toMatchObject({ rank: 3, step: null, oom: true, naming: 'verl' });
    expect(nameOf('/o/snapshot_stop_step_rank6.pickle')).toEqual({
      rank: 6,
      step: null,
      oom: false,
      naming: 'lmms-engine',
    });
    expect(nameOf('/o/snapshot_oom_observer_rank2_pid77_1764238500.pickle')).toMatchObject({
      rank: 2,
      oom: true,
      naming: 'lmms-engine',
    });
    expect(nameOf('/run/oom_rank-12_snapshot.pickle')).toMatchObject({
      rank: 12,
      oom: true,
      naming: 'megatron',
    });
    expect(nameOf('/r/memory_rank3_step_40.pickle')).toMatchObject({ rank: 3, step: 40 });
    // `oom` inside a word is no mark: "zoom", "room".
    expect(nameOf('/r/zoom_rank1.pickle')).toMatchObject({ rank: 1, oom: false });
  });

  it('takes the newest step, or --step; numbers ranks in sorted order when names state none', () => {
    const root = tempDir();
    touch(
      root,
      'memory_snapshot/iteration_10/rank0_memory_snapshot.pickle',
      'memory_snapshot/iteration_10/rank1_memory_snapshot.pickle',
      'memory_snapshot/iteration_20/rank1_memory_snapshot.pickle',
      'memory_snapshot/iteration_20/rank0_memory_snapshot.pickle',
      'memory_snapshot/iteration_20/rank10_memory_snapshot.pickle',
      'memory_snapshot/iteration_19_exit/rank0_memory_snapshot.pickle',
      'memory_snapshot/iteration_20/notes.txt',
    );
    const newest = findRanks(['memory_snapshot'], root, null);
    expect(newest.ranks.map((r) => r.rank)).toEqual([0, 1, 10]);
    expect(newest.ranks[2]!.file).toBe(
      'memory_snapshot/iteration_20/rank10_memory_snapshot.pickle',
    );
    expect(newest).toMatchObject({ naming: 'torchtitan', step: 20, steps: [10, 19, 20] });
    expect(newest.notes[0]).toMatch(/step 20, the newest of steps 10, 19, 20/);
    const older = findRanks(['memory_snapshot'], root, 10);
    expect(older.ranks.map((r) => r.file)).toEqual([
      'memory_snapshot/iteration_10/rank0_memory_snapshot.pickle',
      'memory_snapshot/iteration_10/rank1_memory_snapshot.pickle',
    ]);
    expect(findRanks(['memory_snapshot'], root, 19).ranks[0]!.oom).toBe(true);
    expect(usageError(() => findRanks(['memory_snapshot'], root, 7))).toMatch(
      /--step 7: memory_snapshot holds no snapshots of that step \(it holds steps 10, 19, 20\)/,
    );
    touch(root, 'plain/b.pickle', 'plain/a.pickle', 'plain/c.pkl.gz');
    const sorted = findRanks(['plain'], root, null);
    expect(sorted.naming).toBe('sorted order');
    expect(sorted.ranks.map((r) => `${r.rank}:${r.file}`)).toEqual([
      '0:plain/a.pickle',
      '1:plain/b.pickle',
      '2:plain/c.pkl.gz',
    ]);
  });

  it('prefers regular snapshots to OOM ones, and refuses two traces of one rank', () => {
    const root = tempDir();
    touch(root, 'run/snapshot_0.pickle', 'run/snapshot_1.pickle', 'run/snapshot_oom_rank-1.pickle');
    const job = findRanks(['run'], root, null);
    expect(job.ranks.map((r) => r.file)).toEqual([
      'run/snapshot_0.pickle',
      'run/snapshot_1.pickle',
    ]);
    expect(job.notes.join('\n')).toMatch(/1 out-of-memory snapshots left out/);
    touch(root, 'twice/a/rank0_x.pickle', 'twice/b/rank0_y.pickle');
    expect(usageError(() => findRanks(['twice'], root, null))).toMatch(
      /rank 0 has two traces, twice\/a\/rank0_x\.pickle and twice\/b\/rank0_y\.pickle/,
    );
  });

  it("reads each rank's newest snapshot of allot-lab record's names: its exit one, or its OOM one if it died", () => {
    const root = tempDir();
    touch(
      root,
      'out/rank0_step4.pickle',
      'out/rank0_step6.pickle',
      'out/rank0_step6_exit.pickle',
      'out/rank1_step6.pickle',
      'out/rank1_step6_oom.pickle',
      'out/rank1_step6_exit.pickle',
      'out/rank2_step4.pickle',
      'out/rank2_step5_oom.pickle',
      'out/rank3_step2_oom.pickle',
      'out/rank3_step6.pickle',
    );
    const job = findRanks(['out'], root, null);
    expect(job.ranks.map((r) => r.file)).toEqual([
      'out/rank0_step6_exit.pickle',
      'out/rank1_step6_oom.pickle',
      'out/rank2_step5_oom.pickle',
      // A rank that ran out of memory and went on: its newest snapshot.
      'out/rank3_step6.pickle',
    ]);
    expect(job.ranks.map((r) => r.oom)).toEqual([false, true, true, false]);
    expect(job).toMatchObject({ naming: 'allot-lab', step: null, steps: [2, 4, 5, 6] });
    expect(job.notes).toEqual([
      "each rank's newest snapshot, its steps counted by its own process (--step N reads step N of every rank): " +
        'ranks 0, 3 at step 6; rank 1 at step 6, its out-of-memory snapshot: it died; ' +
        'rank 2 at step 5, its out-of-memory snapshot: it died',
    ]);
    // --step N reads that step of every rank, as for any other names.
    expect(findRanks(['out'], root, 4).ranks.map((r) => r.file)).toEqual([
      'out/rank0_step4.pickle',
      'out/rank2_step4.pickle',
    ]);
    expect(findRanks(['out'], root, 6).ranks.map((r) => r.file)).toEqual([
      'out/rank0_step6_exit.pickle',
      'out/rank1_step6_exit.pickle',
      'out/rank3_step6.pickle',
    ]);
    // Every rank at one step, none dead: that step, and nothing to say.
    const even = tempDir();
    touch(even, 'out/rank0_step3.pickle', 'out/rank1_step3_exit.pickle');
    expect(findRanks(['out'], even, null)).toMatchObject({ step: 3, notes: [] });
  });

  it('reads the latest restart of a rank that torchrun started again, whose steps count from 0', () => {
    const root = tempDir();
    touch(
      root,
      'out/rank0_step10.pickle',
      'out/rank0_step12_oom.pickle',
      'out/rank0_restart1_step5.pickle',
      'out/rank1_step10.pickle',
      'out/rank1_step12_exit.pickle',
      'out/rank1_restart1_step5.pickle',
      'out/rank1_restart1_step6_exit.pickle',
    );
    const job = findRanks(['out'], root, null);
    expect(job.ranks.map((r) => r.file)).toEqual([
      'out/rank0_restart1_step5.pickle',
      'out/rank1_restart1_step6_exit.pickle',
    ]);
    expect(job.notes).toEqual([
      "each rank's newest snapshot, its steps counted by its own process (--step N reads step N of every rank): " +
        'rank 1 at step 6 of its restart 1; rank 0 at step 5 of its restart 1',
    ]);
    // --step N: each rank's step N of its latest restart that has one.
    expect(findRanks(['out'], root, 5).ranks.map((r) => r.file)).toEqual([
      'out/rank0_restart1_step5.pickle',
      'out/rank1_restart1_step5.pickle',
    ]);
    expect(nameOf('out/rank1_restart1_step6_exit.pickle')).toMatchObject({
      rank: 1,
      step: 6,
      exit: true,
      restart: 1,
    });
  });

  it("keeps the job's newest step for torchtitan's folders: a rank that died a step earlier is left out", () => {
    const root = tempDir();
    touch(
      root,
      'memory_snapshot/iteration_8/rank0_memory_snapshot.pickle',
      'memory_snapshot/iteration_8/rank1_memory_snapshot.pickle',
      'memory_snapshot/iteration_6_exit/rank1_memory_snapshot.pickle',
      'memory_snapshot/iteration_10/rank0_memory_snapshot.pickle',
    );
    const job = findRanks(['memory_snapshot'], root, null);
    expect(job.ranks.map((r) => r.file)).toEqual([
      'memory_snapshot/iteration_10/rank0_memory_snapshot.pickle',
    ]);
    expect(job).toMatchObject({ naming: 'torchtitan', step: 10 });
    expect(job.notes).toEqual(['step 10, the newest of steps 6, 8, 10 (--step N reads another)']);
  });

  it('says what it looked for in a folder with no traces, and when a glob matches nothing', () => {
    const root = tempDir();
    touch(root, 'empty/readme.txt');
    expect(usageError(() => findRanks(['empty'], root, null))).toMatch(
      /^empty holds no trace files: looked for \*\.pickle, \*\.pkl, .*torchtitan.*Megatron-Bridge/,
    );
    expect(usageError(() => findRanks(['empty/*.pickle'], root, null))).toBe(
      'empty/*.pickle matches no file',
    );
  });

  it('expands globs itself: *, ?, [..], {a,b} and **', () => {
    const root = tempDir();
    touch(
      root,
      's/step_1/000000_step_1.pickle',
      's/step_1/000001_step_1.pickle',
      's/step_2/x.json',
    );
    expect(namePattern('rank[0-3]_*.pickle').test('rank2_memory.pickle')).toBe(true);
    expect(namePattern('{a,b}.json').test('b.json')).toBe(true);
    const matched = expandGlob('s/step_*/00000?_step_1.pickle', root).map((p) =>
      p.slice(root.length + 1),
    );
    expect(matched).toEqual(['s/step_1/000000_step_1.pickle', 's/step_1/000001_step_1.pickle']);
    expect(expandGlob('s/**/*.json', root).map((p) => p.slice(root.length + 1))).toEqual([
      's/step_2/x.json',
    ]);
    const job = findRanks(['s/step_1/*.pickle'], root, null);
    expect(job.ranks.map((r) => r.rank)).toEqual([0, 1]);
  });

  it('is a job for a folder or a glob; several files for tune, and for replay when named by rank', () => {
    const root = tempDir();
    touch(root, 'd/snapshot_0.pickle', 'a.pickle', 'b.pickle', 'rank0.pickle', 'rank1.pickle');
    expect(isJob('replay', ['d'], root, false)).toBe(true);
    expect(isJob('tune', ['d/*.pickle'], root, false)).toBe(true);
    expect(isJob('replay', ['a.pickle', 'b.pickle'], root, false)).toBe(false);
    expect(isJob('replay', ['rank0.pickle', 'rank1.pickle'], root, false)).toBe(true);
    expect(isJob('tune', ['a.pickle', 'b.pickle'], root, false)).toBe(true);
    expect(isJob('tune', ['a.pickle'], root, false)).toBe(false);
    expect(isJob('tune', ['a.pickle'], root, true)).toBe(true);
    expect(isJob('capacity', ['d'], root, false)).toBe(false);
  });

  it('gives each shard a run of consecutive ranks, every rank once', () => {
    const ranks = Array.from({ length: 10 }, (_, i) => i);
    const shards = [0, 1, 2].map((index) => shardOf(ranks, { index, count: 3 }));
    expect(shards).toEqual([
      [0, 1, 2],
      [3, 4, 5],
      [6, 7, 8, 9],
    ]);
    // More shards than ranks: some shards are empty, and still every rank is in one.
    expect([0, 1, 2, 3].map((index) => shardOf([1, 2], { index, count: 4 }))).toEqual([
      [],
      [1],
      [],
      [2],
    ]);
    expect(rankList([0, 1, 2, 3, 7, 9, 10])).toBe('0–3, 7, 9–10');
  });
});

describe('a job: its settings and the one for every rank', () => {
  it('replays every rank under a fixed list, the defaults first, each setting canonical', () => {
    const plain = jobCandidates(false);
    expect(plain).toHaveLength(26);
    expect(plain[0]).toBe('');
    expect(plain).toContain('roundup_power2_divisions:8,expandable_segments:True');
    for (const config of jobCandidates(true)) {
      expect(formatAllocConf(parseAllocConf(config))).toBe(config);
    }
    expect(jobCandidates(true)).toHaveLength(68);
    expect(jobCandidates(true)).toContain('max_split_size_mb:128,garbage_collection_threshold:0.7');
    expect(formatAllocConf(DEFAULT_SETTINGS)).toBe('');
  });

  const figures = (peaks: number[], failures: number[] = peaks.map(() => 0)) =>
    peaks.map((peak, i) => ({
      config: '',
      peakReservedBytes: peak,
      failures: failures[i]!,
      segmentCalls: 1,
    }));

  it("minimises the worst rank's peak, never worse than the defaults on any rank", () => {
    const candidates = ['', 'a:1', 'b:2', 'c:3'];
    const advice = adviseJob(candidates, [
      // a:1 is best on the worst rank but worse than the defaults on rank 1.
      { rank: 0, settings: figures([100, 60, 80, 90]) },
      { rank: 1, settings: figures([50, 55, 40, 45]) },
    ]);
    expect(advice).toMatchObject({
      config: 'b:2',
      index: 2,
      worst: { rank: 0, peakReservedBytes: 80 },
      defaultsWorst: { rank: 0, peakReservedBytes: 100 },
      savingBytes: 20,
      ruledOut: { failing: 0, worseOnARank: 1 },
    });
  });

  it('rules out a setting that fails an allocation on any rank, and keeps the defaults when none is better', () => {
    const candidates = ['', 'a:1', 'b:2'];
    const advice = adviseJob(candidates, [
      { rank: 0, settings: figures([100, 50, 101]) },
      { rank: 3, settings: figures([40, 30, 40], [0, 2, 0]) },
    ]);
    expect(advice).toMatchObject({ config: '', ruledOut: { failing: 1, worseOnARank: 1 } });
    expect(adviseJob(candidates, [])).toBeNull();
  });
});
