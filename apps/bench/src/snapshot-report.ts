/**
 * The table `snapshot-read` prints: per generated file, the lab's time and peak memory reading it
 * and CPython's `pickle.load` of the same file, medians of the runs. A run that failed is a row
 * too, with its exit status and the last line it wrote to stderr.
 */
import type { ChildUsage } from './child-usage';
import { median } from './measure';
import { formatMegabytes } from './snapshot-file';

/** The runs of one reader on one file. */
export interface ReaderRuns {
  /** Successful runs. */
  readonly runs: readonly ChildUsage[];
  /** The first failed run, if any (the reader is not run again on that file). */
  readonly failure: ChildUsage | null;
  /** Seconds each successful run reported for the work itself, when it reports them. */
  readonly workSeconds?: readonly number[];
}

/** One file and how the readers did on it. */
export interface SnapshotRow {
  readonly file: string;
  readonly bytes: number;
  readonly events: number;
  readonly depth: number;
  readonly sharedFrames: number;
  readonly lab: ReaderRuns;
  /** Null when python3 was not run. */
  readonly python: ReaderRuns | null;
}

function seconds(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)} s` : '–';
}

function rss(runs: readonly ChildUsage[]): number {
  const measured = runs.flatMap((r) => (r.peakRssBytes === null ? [] : [r.peakRssBytes]));
  return median(measured);
}

function megabytes(bytes: number): string {
  return Number.isFinite(bytes) ? formatMegabytes(bytes) : '–';
}

function failed(usage: ChildUsage): string {
  const why = usage.lastStderrLine.replaceAll('|', '\\|').slice(0, 160);
  const status = usage.exitCode === null ? 'did not start' : `exit ${usage.exitCode}`;
  return `failed (${status}): ${why || 'no message'}`;
}

/** Seconds of the work: what the reader reported, else the wall time of the process. */
function workSeconds(reader: ReaderRuns): number {
  return median(reader.workSeconds ?? reader.runs.map((r) => r.seconds));
}

/** The row's cells, in {@link HEADER}'s order. */
export function rowCells(row: SnapshotRow): string[] {
  const { lab, python } = row;
  const labSeconds = workSeconds(lab);
  const labRss = rss(lab.runs);
  const labCells =
    lab.failure !== null && lab.runs.length === 0
      ? [failed(lab.failure), '–', '–']
      : [seconds(labSeconds), megabytes(labRss), (labRss / row.bytes).toFixed(2)];
  let pythonCells = ['–', '–', '–'];
  if (python !== null && python.failure !== null && python.runs.length === 0) {
    pythonCells = [failed(python.failure), '–', '–'];
  } else if (python !== null) {
    const pythonSeconds = workSeconds(python);
    const ratio = pythonSeconds / labSeconds;
    pythonCells = [
      seconds(pythonSeconds),
      megabytes(rss(python.runs)),
      Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : '–',
    ];
  }
  return [
    row.file,
    formatMegabytes(row.bytes),
    row.events.toLocaleString('en-US'),
    String(row.depth),
    String(row.sharedFrames),
    ...labCells,
    ...pythonCells,
  ];
}

/** Column titles. */
export const HEADER = [
  'file',
  'size',
  'events',
  'stack depth',
  'shared frames',
  'lab time',
  'lab peak RSS',
  'RSS / size',
  'python pickle.load',
  'python peak RSS',
  'python / lab',
];

/** The rows as a markdown table. */
export function markdownTable(rows: readonly SnapshotRow[]): string {
  const lines = [HEADER, HEADER.map(() => '---'), ...rows.map(rowCells)];
  return `${lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n')}\n`;
}
