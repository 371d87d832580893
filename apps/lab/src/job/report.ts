/**
 * A job's page (`OUT/index.html`, with `OUT/results.json`): its data from the job's results, drawn
 * by the lab's client modules (`ui/job-page.ts`) in a file written as the report's is
 * (`report/report-file.ts`: the bundle, its style and the data in one file). Each rank links to
 * its own page (`ranks/rank-R/index.html`, written by the worker that read it).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pageParts, writeParts } from '../report/report-file';
import type { JobPageData } from '../ui/job-data';
import { adviceLines, formatJobReplay, formatJobTune, summaryLines } from './format';
import type { JobResults } from './results';

/** What a job's page shows of `job` (see `ui/job-data.ts`). */
export function jobPageData(job: JobResults): JobPageData {
  return {
    job: job.job,
    command: job.command,
    createdAt: job.createdAt,
    node: job.node,
    jobRanks: job.jobRanks.length,
    allocConf: job.allocConf ?? null,
    advice: job.job === 'tune' ? adviceLines(job) : null,
    summary: summaryLines(job),
    ranks: job.ranks.map((rank) => ({
      rank: rank.rank,
      file: rank.file,
      page: rank.report ?? null,
      events: rank.events,
      peakLiveBytes: rank.peakLiveBytes,
      predictedBytes: rank.replayed?.peakReservedBytes ?? null,
      recordedBytes: rank.recordedPeakReservedBytes,
      error: rank.fidelity?.error ?? null,
      defaultsBytes: rank.defaultsPeakReservedBytes ?? null,
      defaultsFailures: rank.defaultsFailures ?? null,
      tunedBytes: rank.peakReservedBytes ?? null,
      flagged: rank.flagged,
    })),
    failed: job.failed.map(({ rank, message }) => ({ rank, message })),
    worst: job.worst?.rank ?? null,
    printed: job.job === 'tune' ? formatJobTune(job) : formatJobReplay(job),
  };
}

/** Writes `OUT/index.html` and `OUT/results.json` for `job`; returns the page's path. */
export function writeJobReport(job: JobResults, folder: string): string {
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'results.json'), `${JSON.stringify(job)}\n`);
  const path = join(folder, 'index.html');
  writeParts(path, pageParts('job', jobPageData(job)));
  return path;
}
