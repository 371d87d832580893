/**
 * The text a job prints: one row per rank, the worst rank and the spread between ranks, the ranks
 * whose recording disagrees with the model, and (tune) the one setting for every rank.
 */
import { formatColumns } from '../report/tables';
import {
  formatBytes,
  formatCount,
  formatPercent,
  formatRatio,
  formatSignedPercent,
  wallOrigin,
} from '../units';
import { jobAdviceText } from './advice-text';
import { confText, settingGroupsText } from './job-notes';
import { rankList } from './rank-name';
import { FLAG_ERROR, FLAG_MATCH, type JobRank, type JobResults } from './results';

/** The job's first lines: what was read, how the ranks were named, what was left out. */
function headLines(job: JobResults): string[] {
  const input = job.input;
  const share = job.shard
    ? `, shard ${job.shard.index} of ${job.shard.count} (${formatCount(job.ranks.length + job.failed.length)} of ${formatCount(job.jobRanks.length)} ranks)`
    : '';
  const step = input.step === null ? '' : `, step ${input.step}`;
  const lines = [
    `Job: ${formatCount(job.jobRanks.length)} ranks (numbered by ${input.naming}${step})${share}; ` +
      `${formatCount(job.ranks.length)} replayed, ${formatCount(job.failed.length)} failed`,
  ];
  for (const note of input.notes) lines.push(`  ${note}`);
  return lines;
}

function fidelityCells(rank: JobRank): string[] {
  const f = rank.fidelity;
  const segments =
    f?.segmentsRecorded !== undefined ? `${f.segmentsMatched} of ${f.segmentsRecorded}` : '–';
  return [
    rank.recordedPeakReservedBytes === null ? '–' : formatBytes(rank.recordedPeakReservedBytes),
    f?.error == null ? '–' : formatSignedPercent(f.error),
    segments,
    rank.flagged === null ? '' : '!',
  ];
}

/** The ranks whose recording ends in an out-of-memory error, and where each hit the wall. */
function diedLines(job: JobResults): string[] {
  const died = job.ranks.filter((rank) => rank.oom !== undefined);
  if (died.length === 0) return [];
  const lines = [
    `Ranks that ran out of memory: ${rankList(died.map((rank) => rank.rank))} ` +
      '(every setting also asks for the failed request at its place, on that rank’s wall)',
  ];
  for (const rank of died) {
    const oom = rank.oom!;
    const wall =
      oom.capacityBytes === null
        ? 'the wall unknown (no device_free)'
        : `a ${formatBytes(oom.capacityBytes)} wall (${wallOrigin(oom.capacitySource)})`;
    lines.push(
      `  rank ${rank.rank}: a ${formatBytes(oom.sizeBytes)} request at entry ${formatCount(oom.event)}, ${wall}`,
    );
  }
  return lines;
}

/** Worst rank, spread, and the ranks flagged. */
export function summaryLines(job: JobResults): string[] {
  const lines: string[] = [];
  if (job.worst && job.spread) {
    const s = job.spread;
    lines.push(
      `Worst rank: ${job.worst.rank}, predicted peak reserved ${formatBytes(job.worst.peakReservedBytes)} under its recorded settings`,
    );
    lines.push(
      `Spread between ranks: ${formatBytes(s.maxBytes - s.minBytes)} (rank ${s.minRank}: ${formatBytes(s.minBytes)} to rank ${s.maxRank}: ${formatBytes(s.maxBytes)}, ` +
        `${formatRatio(s.maxBytes / Math.max(1, s.minBytes))})`,
    );
  }
  const flagged = job.ranks.filter((rank) => rank.flagged !== null);
  const rule = `more than ${formatPercent(FLAG_ERROR, 0)} from the recorded peak reserved, or fewer than ${formatPercent(FLAG_MATCH, 0)} of its segment decisions`;
  if (flagged.length > 0) {
    lines.push(`Ranks whose recording disagrees with the model (${rule}), marked !:`);
    for (const rank of flagged) lines.push(`  rank ${rank.rank}: ${rank.flagged}`);
  } else if (job.ranks.some((rank) => rank.fidelity !== null)) {
    lines.push(`Every rank's recording agrees with the model (none ${rule})`);
  }
  lines.push(...diedLines(job));
  if (job.mixedSettings) {
    lines.push(`Ranks recorded with different settings: ${settingGroupsText(job.mixedSettings)}`);
  }
  return lines;
}

function failedLines(job: JobResults): string[] {
  if (job.failed.length === 0) return [];
  return [
    `Failed ranks (${rankList(job.failed.map((f) => f.rank))}):`,
    ...job.failed.map((f) => `  rank ${f.rank}: ${f.message}`),
  ];
}

/** `replay DIR`: one row per rank, under its recorded settings (and each `--config`). */
export function formatJobReplay(job: JobResults): string {
  const header = [
    'rank',
    'file',
    'events',
    'peak live',
    'predicted',
    'recorded',
    'error',
    'segments matched',
    '',
  ];
  header.push(...job.candidates.map((config) => `--config ${config}`));
  const table = [header];
  for (const rank of job.ranks) {
    table.push([
      String(rank.rank),
      rank.file,
      formatCount(rank.events),
      formatBytes(rank.peakLiveBytes),
      rank.replayed ? formatBytes(rank.replayed.peakReservedBytes) : '–',
      ...fidelityCells(rank),
      ...(rank.configs ?? []).map((c) => formatBytes(c.peakReservedBytes)),
    ]);
  }
  const lines = [
    ...headLines(job),
    "  predicted: peak reserved replayed under the settings each rank recorded (PyTorch's defaults where none); figures in torch.cuda.memory_stats() units",
    '',
    ...formatColumns(table, [1, 8]).map((line) => `  ${line}`),
    '',
    ...summaryLines(job),
    ...failedLines(job),
  ];
  return `${lines.join('\n')}\n`;
}

function deviceLine(job: JobResults): string {
  const devices = new Set(
    job.ranks.map((rank) => `${rank.device.memory}/${rank.device.fraction}/${rank.device.origin}`),
  );
  const first = job.ranks[0]?.device;
  if (first === undefined) return 'device: no rank was read';
  if (devices.size > 1)
    return 'device: each rank as its trace records it, else 80 GiB (see --json)';
  const fraction =
    first.fraction === null
      ? 'no per-process memory fraction'
      : `per-process memory fraction ${first.fraction}`;
  const origin =
    first.origin === 'assumed'
      ? 'assumed: state yours with --memory and --fraction'
      : first.origin === 'recorded'
        ? 'as the traces record it'
        : 'as stated';
  return `device: ${formatBytes(first.memory ?? 0)} of memory, ${fraction}; ${origin}`;
}

/** The setting for every rank (tune), in words: the wording the job's page and the web app share. */
export function adviceLines(job: JobResults): string[] {
  if (job.mixedSettings && !job.forced) {
    return [
      'Not tuned as one job: its ranks were recorded with different settings (--force tunes them as one).',
    ];
  }
  if (!job.advice) return [];
  const { verdict, reasons } = jobAdviceText(
    job.advice,
    job.ranks.map((rank) => ({
      rank: rank.rank,
      defaultsFailures: rank.defaultsFailures ?? 0,
      died: rank.oom !== undefined,
    })),
  );
  return [verdict, ...reasons.map((reason) => `  ${reason}`)];
}

/** `tune DIR`: each rank under the defaults and under the job's setting, then the setting. */
export function formatJobTune(job: JobResults): string {
  const table = [
    [
      'rank',
      'file',
      'peak live',
      'defaults',
      'with the setting',
      'saving',
      'failed',
      'recorded settings',
      '',
    ],
  ];
  for (const rank of job.ranks) {
    const defaults = rank.defaultsPeakReservedBytes ?? 0;
    const peak = rank.peakReservedBytes ?? null;
    table.push([
      String(rank.rank),
      rank.file,
      formatBytes(rank.peakLiveBytes),
      rank.defaultsFailures
        ? `${formatBytes(defaults)}, ${formatCount(rank.defaultsFailures)} failed`
        : formatBytes(defaults),
      peak === null ? '–' : formatBytes(peak),
      peak === null || defaults === 0 || rank.defaultsFailures
        ? '–'
        : formatPercent((defaults - peak) / defaults),
      rank.failures == null ? '–' : formatCount(rank.failures),
      confText(rank.recordedConf),
      rank.flagged === null ? '' : '!',
    ]);
  }
  const lines = [
    ...headLines(job),
    `  ${deviceLine(job)}`,
    `  searched ${job.candidates.length} settings on every rank (one pass over each file); figures in torch.cuda.memory_stats() units (reserved_bytes.all.peak)`,
    '',
    ...formatColumns(table, [1, 7, 8]).map((line) => `  ${line}`),
    '',
    ...adviceLines(job),
    '',
    ...summaryLines(job),
    ...failedLines(job),
  ];
  return `${lines.join('\n')}\n`;
}
