/**
 * A job's page data: what `renderJob` (job-page.ts) draws, built by the lab from a job's results
 * (`job/report.ts`'s `jobPageData`) and carried in the job page's JSON block. Text the terminal
 * prints too (the setting for every rank, the summary, the whole output) comes written; figures
 * come as numbers, which the page formats and draws.
 */

/** Everything a job's page shows. */
export interface JobPageData {
  readonly job: 'replay' | 'tune';
  /** How the job was invoked, for the page's heading. */
  readonly command: string;
  readonly createdAt: string;
  readonly node: string;
  /** Ranks in the job, this shard's or not. */
  readonly jobRanks: number;
  /** tune: the setting for every rank ('' for the defaults), null when not tuned as one. */
  readonly allocConf: string | null;
  /** tune: the setting for every rank, as `tune DIR` words it (lines); replay: null. */
  readonly advice: readonly string[] | null;
  /** The worst rank, the spread, the ranks flagged and those that died, as printed (lines). */
  readonly summary: readonly string[];
  readonly ranks: readonly JobPageRank[];
  /** The ranks that could not be read or replayed, each with why. */
  readonly failed: readonly { readonly rank: number; readonly message: string }[];
  /** The rank with the highest predicted peak under its recorded settings, or null. */
  readonly worst: number | null;
  /** What the lab printed, whole. */
  readonly printed: string;
}

/** One rank of a job, as its page shows it; bytes are `torch.cuda.memory_stats()`'s. */
export interface JobPageRank {
  readonly rank: number;
  readonly file: string;
  /** Its own page, relative to the job's (`ranks/rank-R/index.html`), or null. */
  readonly page: string | null;
  readonly events: number;
  /** Requested bytes live at once, at most. */
  readonly peakLiveBytes: number;
  /** Peak reserved bytes replayed under its recorded settings, or null when not replayed. */
  readonly predictedBytes: number | null;
  /** PyTorch's own peak reserved bytes in the recording, or null when it states none. */
  readonly recordedBytes: number | null;
  /** (predicted − recorded) / recorded, or null. */
  readonly error: number | null;
  /** tune: peak reserved bytes with PyTorch's defaults, and the allocations they fail; replay: null. */
  readonly defaultsBytes: number | null;
  readonly defaultsFailures: number | null;
  /** tune: peak reserved bytes with the job's setting, null when not tuned as one. */
  readonly tunedBytes: number | null;
  /** Why its recording disagrees with the model, or null. */
  readonly flagged: string | null;
}
