/**
 * `replay DIR`, `tune DIR` and `merge`: a job of many ranks, one snapshot each.
 *
 * ```
 *  DIR ─► findRanks ─► --shard ─► runRanks (worker threads) ─► jobResults ─► table | --json ─► exit
 *  merge A.json B.json ─► the shards' ranks ───────────────────► jobResults ─► the same
 * ```
 *
 * Exit status: 2 when a rank failed (each named with its one-line error; the others' figures are
 * printed), when a shard's ranks are missing from a merge, or when the ranks of a `tune` were
 * recorded with different settings (without --force); 1 when every setting fails an allocation on
 * some rank; else 0.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { EXIT_BUG, fileErrorMeaning } from '../failure';
import { checkOutFolder } from '../input';
import {
  EXIT_BAD_INPUT,
  EXIT_FAILED_ALLOCATIONS,
  EXIT_OK,
  type LabOptions,
  UsageError,
} from '../options';
import { progressReporter } from '../progress';
import { formatCount } from '../units';
import { jobCandidates } from './candidates';
import { formatJobReplay, formatJobTune } from './format';
import { failedRanksText, failedRankText, mixedSettingsText } from './job-notes';
import { findRanks, shardOf } from './layout';
import { runRanks } from './pool';
import type { RankResult, RankTask } from './rank';
import { writeJobReport } from './report';
import { type FailedRank, type JobFrame, type JobResults, jobResults, rankOf } from './results';

/** Where a job writes (the lab's `LabIo`). */
export interface JobIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WriteStream | NodeJS.WritableStream;
  readonly cwd?: string;
}

function frameOf(
  options: LabOptions,
  argv: readonly string[],
): Pick<JobFrame, 'command' | 'createdAt' | 'node' | 'platform' | 'force'> {
  return {
    command: ['allot-lab', ...argv].join(' '),
    createdAt: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    force: options.force,
  };
}

/** `replay DIR` or `tune DIR` (see the module comment); returns the exit status. */
export async function jobCommand(
  options: LabOptions,
  argv: readonly string[],
  io: JobIo,
): Promise<number> {
  const cwd = io.cwd ?? process.cwd();
  const input = findRanks(options.files, cwd, options.step);
  if (options.report) checkOutFolder(options.out, cwd);
  const report = options.report ? resolve(cwd, options.out) : null;
  const mine = shardOf(input.ranks, options.shard);
  const mode = options.command === 'tune' ? 'tune' : 'replay';
  const candidates =
    mode === 'tune' ? jobCandidates(options.fraction !== null) : options.configs.map((c) => c.text);
  const tasks: RankTask[] = mine.map((rank) => ({
    rank: rank.rank,
    file: rank.file,
    cwd,
    mode,
    input: { format: options.format, maxInput: options.maxInput, devices: options.devices },
    memory: options.memory,
    fraction: options.fraction,
    configs: candidates,
    report,
  }));
  const totalBytes = mine.reduce((sum, rank) => sum + rank.bytes, 0);
  const stream = io.stderr as NodeJS.WriteStream;
  const progress = progressReporter({ quiet: options.quiet, stream });
  const every = stream.isTTY === true ? 200 : 2000;
  let last = Number.NEGATIVE_INFINITY;
  let lastDone = -1;
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  const outcomes = await runRanks(tasks, {
    jobs: options.jobs,
    onProgress: (done, bytesRead) => {
      const now = performance.now();
      // Each rank finished is shown; the bytes read in between, a few times a second at most.
      if (now - last < every && done === lastDone) return;
      last = now;
      lastDone = done;
      progress.update(
        done,
        tasks.length,
        `ranks: ${formatCount(done)} done of ${formatCount(tasks.length)}, ${mib(bytesRead)} of ${mib(totalBytes)} MiB read`,
      );
    },
  });
  progress.done();
  const results: RankResult[] = [];
  const failed: FailedRank[] = [];
  for (const outcome of outcomes) {
    if (outcome.ok) results.push(outcome.result);
    else
      failed.push({
        rank: outcome.rank,
        file: outcome.file,
        message: outcome.message,
        bug: outcome.bug,
      });
  }
  const { ranks: _ranks, ...facts } = input;
  const job = jobResults(
    {
      ...frameOf(options, argv),
      job: mode,
      input: facts,
      jobRanks: input.ranks.map((rank) => rank.rank),
      shard: options.shard,
      candidates,
    },
    results,
    failed,
  );
  return printJob(job, options, io);
}

/**
 * Writes the job's page (unless --no-report), prints `job` (a table, or `--json`) and its failures;
 * returns the exit status.
 */
export function printJob(job: JobResults, options: LabOptions, io: JobIo): number {
  const cwd = io.cwd ?? process.cwd();
  const page = options.report ? writeJobReport(job, resolve(cwd, options.out)) : null;
  if (options.json) io.stdout.write(`${JSON.stringify(job, null, 2)}\n`);
  else {
    io.stdout.write(job.job === 'tune' ? formatJobTune(job) : formatJobReplay(job));
    if (page !== null) {
      io.stdout.write(`\nReport: ${page} (each rank's own page is linked from it)\n`);
    }
  }
  if (job.failed.length > 0) {
    for (const f of job.failed) io.stderr.write(`allot-lab: ${failedRankText(f)}\n`);
    const bug = job.failed.some((f) => f.bug);
    const status = bug ? EXIT_BUG : EXIT_BAD_INPUT;
    io.stderr.write(
      `allot-lab: ${failedRanksText(job.failed, job.ranks.length)} (exit status ${status})\n`,
    );
    return status;
  }
  if (job.job === 'tune' && job.mixedSettings && !job.forced) {
    io.stderr.write(
      `allot-lab: ${mixedSettingsText(job.mixedSettings)}; --force tunes them as one (exit status ${EXIT_BAD_INPUT})\n`,
    );
    return EXIT_BAD_INPUT;
  }
  const failures =
    job.job === 'tune'
      ? (job.advice?.failures ?? 0)
      : job.ranks.reduce(
          (sum, rank) =>
            sum +
            (rank.replayed?.failures ?? 0) +
            (rank.configs ?? []).reduce((s, c) => s + c.failures, 0),
          0,
        );
  if (failures > 0) {
    io.stderr.write(
      job.job === 'tune'
        ? `allot-lab: every setting tried failed allocations on some rank: the memory searched under is too small (exit status ${EXIT_FAILED_ALLOCATIONS})\n`
        : `allot-lab: ${formatCount(failures)} allocations failed (exit status ${EXIT_FAILED_ALLOCATIONS})\n`,
    );
    return EXIT_FAILED_ALLOCATIONS;
  }
  return EXIT_OK;
}

function readShard(file: string, cwd: string): JobResults {
  let text: string;
  try {
    text = readFileSync(resolve(cwd, file), 'utf8');
  } catch (error) {
    const meaning = fileErrorMeaning(error);
    if (meaning !== null) throw new UsageError(`cannot read ${file}: ${meaning}`);
    throw error;
  }
  let parsed: Partial<JobResults>;
  try {
    parsed = JSON.parse(text) as Partial<JobResults>;
  } catch (error) {
    throw new UsageError(`${file}: not JSON (${(error as Error).message})`);
  }
  if (
    parsed?.tool !== 'allot-lab' ||
    (parsed.job !== 'replay' && parsed.job !== 'tune') ||
    !Array.isArray(parsed.ranks) ||
    !Array.isArray(parsed.candidates)
  ) {
    throw new UsageError(
      `${file}: not the --json output of a job (allot-lab replay DIR --json, or tune DIR --json)`,
    );
  }
  return parsed as JobResults;
}

/** `merge RESULTS.json...`: one job's answer from its shards' `--json` outputs. */
export function mergeCommand(options: LabOptions, argv: readonly string[], io: JobIo): number {
  const cwd = io.cwd ?? process.cwd();
  if (options.report) checkOutFolder(options.out, cwd);
  const shards = options.files.map((file) => ({ file, job: readShard(file, cwd) }));
  const first = shards[0]!;
  for (const { file, job } of shards.slice(1)) {
    if (job.job !== first.job.job) {
      throw new UsageError(
        `${file} is from ${job.job}, ${first.file} from ${first.job.job}: merge one kind`,
      );
    }
    if (job.candidates.join('\n') !== first.job.candidates.join('\n')) {
      throw new UsageError(
        `${file} and ${first.file} were replayed under different settings (a --fraction or --config on one only): run every shard with the same options`,
      );
    }
  }
  const ranks = new Map<number, { file: string; result: RankResult }>();
  const failed = new Map<number, FailedRank>();
  const jobRanks = new Set<number>();
  for (const { file, job } of shards) {
    for (const rank of job.jobRanks ?? []) jobRanks.add(rank);
    for (const rank of job.ranks) {
      const seen = ranks.get(rank.rank);
      if (seen && seen.result.file !== rank.file) {
        throw new UsageError(
          `rank ${rank.rank} is in ${seen.file} (${seen.result.file}) and in ${file} (${rank.file}): merge the shards of one job`,
        );
      }
      ranks.set(rank.rank, { file, result: rankOf(rank, job.candidates) });
    }
    for (const f of job.failed ?? []) failed.set(f.rank, f);
  }
  for (const rank of ranks.keys()) failed.delete(rank);
  for (const rank of jobRanks) {
    if (!ranks.has(rank) && !failed.has(rank)) {
      failed.set(rank, { rank, file: '', message: 'no shard given holds this rank', bug: false });
    }
  }
  const job = jobResults(
    {
      ...frameOf(options, argv),
      force: options.force || shards.some((s) => s.job.forced === true),
      job: first.job.job,
      input: first.job.input,
      jobRanks: [...jobRanks].sort((a, b) => a - b),
      shard: null,
      candidates: first.job.candidates,
    },
    [...ranks.values()].map((entry) => entry.result),
    [...failed.values()],
  );
  return printJob(job, options, io);
}
