/**
 * What `allot-lab watch` prints: a row per rank in fixed-width columns (so rows printed one by one
 * into a log line up under one header), the job's advice so far, and the post-mortem when a rank
 * dies; `--json` the same as one JSON object per update (JSON Lines).
 *
 * ```
 *  rank  step  reserved  allocated  unallocated  recorded peak  trend  replayed peak  advised peak  file
 *     0    12  13.6 GiB   9.70 GiB     3.91 GiB       13.6 GiB  ▂▅█ ↑       13.6 GiB      11.1 GiB  rank0_step12.pickle
 * ```
 */
import type { JobAdvice } from '../job/advice';
import { postMortemReport } from '../report/post-mortem-text';
import { recordedOomLines } from '../report/tables';
import { formatBytes, formatPercent } from '../units';
import type { RankRow, TrendPoint, WatchUpdate } from './watched-job';

/** Column titles and widths; the last column (the file and notes) takes what it needs. */
const COLUMNS = [
  ['rank', 5],
  ['step', 6],
  ['reserved', 10],
  ['allocated', 11],
  ['unallocated', 13],
  ['recorded peak', 15],
  ['trend', 12],
  ['replayed peak', 15],
  ['advised peak', 14],
] as const;

const BARS = '▁▂▃▄▅▆▇█';
/** Dumps a trend shows, the latest. */
const TREND_SHOWN = 8;

/** The header line of the table. */
export function headerLine(): string {
  return `${COLUMNS.map(([title, width]) => title.padStart(width)).join('')}  file`;
}

/**
 * PyTorch's peak in each recent dump as a bar, and the last against the one before: ↑ more than
 * 1 % higher, ↓ more than 1 % lower, → else.
 */
export function trendText(trend: readonly TrendPoint[]): string {
  const peaks = trend
    .map((point) => point.recordedPeakBytes)
    .filter((peak): peak is number => peak !== null)
    .slice(-TREND_SHOWN);
  if (peaks.length === 0) return '–';
  const top = Math.max(...peaks);
  const bars = peaks
    .map((peak) => BARS[top > 0 ? Math.min(7, Math.floor((peak / top) * 7.999)) : 0])
    .join('');
  if (peaks.length < 2) return bars;
  const [before, last] = peaks.slice(-2) as [number, number];
  const arrow = last > before * 1.01 ? '↑' : last < before * 0.99 ? '↓' : '→';
  return `${bars} ${arrow}`;
}

/** A rank's row. */
export function rowLine(row: RankRow): string {
  const reserved = row.stats.reserved_bytes.all;
  const allocated = row.stats.allocated_bytes.all;
  const cells = [
    String(row.rank),
    row.step === null ? '–' : String(row.step),
    formatBytes(reserved),
    formatBytes(allocated),
    formatBytes(reserved - allocated),
    formatBytes(row.recordedPeakReservedBytes),
    trendText(row.trend),
    formatBytes(row.peakReservedBytes),
    row.advisedPeakReservedBytes === null ? '–' : formatBytes(row.advisedPeakReservedBytes),
  ];
  const notes: string[] = [];
  if (row.gaps.length > 0) notes.push(`${row.gaps.length} gap${row.gaps.length === 1 ? '' : 's'}`);
  if (row.diedAt !== null) notes.push('out of memory');
  const line = cells.map((cell, i) => cell.padStart(COLUMNS[i]![1])).join('');
  return `${line}  ${row.file}${notes.length > 0 ? ` (${notes.join(', ')})` : ''}`;
}

/** The job's advice so far, in a line. */
export function adviceLine(advice: JobAdvice | null): string {
  if (advice === null) return 'advice so far: none';
  const setting =
    advice.config === '' ? "PyTorch's defaults" : `PYTORCH_CUDA_ALLOC_CONF=${advice.config}`;
  const saving =
    advice.savingBytes > 0
      ? `, against ${formatBytes(advice.defaultsWorst.peakReservedBytes)} with the defaults (${formatPercent(advice.savingFraction)} less)`
      : '';
  return (
    `advice so far: ${setting}; worst rank ${advice.worst.rank} predicted at ` +
    `${formatBytes(advice.worst.peakReservedBytes)}${saving}`
  );
}

/** The lines that say what a damaged file, a gap or a death was. */
export function noticeLines(update: WatchUpdate): string[] {
  if (update.type === 'skipped') {
    // The reader's errors name the file already.
    const named = update.message.startsWith(`${update.file}:`);
    return [`skipped ${named ? '' : `${update.file}: `}${update.message}`];
  }
  if (update.type === 'oom') {
    const settings =
      update.recordedConf === null
        ? "the recording does not state its settings: PyTorch's defaults assumed"
        : `recorded with PYTORCH_CUDA_ALLOC_CONF='${update.recordedConf}'`;
    return [
      `rank ${update.rank} ran out of memory${update.step === null ? '' : ` in step ${update.step}`}:`,
      ...postMortemReport(
        `${update.file}: ${settings}`,
        update.oom,
        recordedOomLines(update.oom),
      ).map((line) => `  ${line}`),
    ];
  }
  return update.joined.gap === null
    ? []
    : [`rank ${update.row.rank}, ${update.row.file}: a gap in the timeline: ${update.joined.gap}`];
}

/** An update as one JSON object (see the README's `watch --json`). */
export function updateJson(update: WatchUpdate): Record<string, unknown> {
  if (update.type === 'skipped') return { file: update.file, skipped: update.message };
  if (update.type === 'oom') {
    return { rank: update.rank, file: update.file, step: update.step, oom: update.oom };
  }
  const { row, joined, advice } = update;
  const reserved = row.stats.reserved_bytes.all;
  const allocated = row.stats.allocated_bytes.all;
  return {
    rank: row.rank,
    device: row.device,
    file: row.file,
    step: row.step,
    peakReservedBytes: row.peakReservedBytes,
    recordedPeakReservedBytes: row.recordedPeakReservedBytes,
    reservedBytes: reserved,
    allocatedBytes: allocated,
    unallocatedBytes: reserved - allocated,
    inactiveSplitBytes: row.stats.inactive_split_bytes.all,
    advice:
      advice === null
        ? null
        : { allocConf: advice.config, peakReservedBytes: row.advisedPeakReservedBytes },
    newEntries: joined.newEntries,
    overlapEntries: joined.overlapEntries,
    gap: joined.gap,
    seconds: update.seconds,
    cpuSeconds: update.cpuSeconds,
  };
}
