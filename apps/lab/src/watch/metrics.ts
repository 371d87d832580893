/**
 * A watched job as Prometheus gauges (the text exposition format, version 0.0.4), one series per
 * rank and device, named after the keys of `torch.cuda.memory_stats()` so that a Grafana panel
 * made for PyTorch's figures reads these too: `memory_stats()["inactive_split_bytes.all.current"]`
 * is `allot_inactive_split_bytes_all_current{rank="3",device="0"}`.
 *
 * ```
 *  at each rank's latest dump   allot_FAMILY_POOL_current   (dump-stats.ts: reserved, allocated,
 *                                                           active, requested, inactive split ...)
 *  over its merged timeline     allot_reserved_bytes_all_peak (PyTorch's, as recorded), allot_num_ooms,
 *                               allot_replayed_peak_reserved_bytes, allot_advised_peak_reserved_bytes
 *  the watch itself             allot_watch_step, allot_watch_entries, allot_watch_gaps,
 *                               allot_watch_skipped_files, allot_advice_info{alloc_conf}
 * ```
 */
import { STAT_FAMILIES, STAT_POOLS, type StatFamily } from './dump-stats';
import type { RankRow, WatchedJob } from './watched-job';

/** Content type of the text format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** What each `memory_stats()` family counts. */
const FAMILY_HELP: Readonly<Record<StatFamily, string>> = {
  reserved_bytes: 'bytes reserved by the caching allocator (its segments)',
  allocated_bytes: 'bytes in allocated blocks',
  active_bytes: 'bytes in active blocks (allocated, or freed and waiting for their streams)',
  requested_bytes: 'bytes the active allocations asked for, before rounding',
  inactive_split_bytes:
    'bytes in free blocks of segments also holding others (empty_cache cannot release them)',
  segment: 'segments (cudaMalloc allocations) held',
  allocation: 'allocated blocks',
  active: 'active blocks',
  inactive_split: 'free blocks in segments also holding others',
};

/** A label value, escaped as the text format wants. */
function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** One gauge: its HELP and TYPE lines, and a sample per labelled value. */
function gauge(name: string, help: string, samples: readonly [string, number][]): string[] {
  const lines = [
    `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`,
    `# TYPE ${name} gauge`,
  ];
  for (const [labels, value] of samples) {
    if (Number.isFinite(value)) lines.push(`${name}${labels} ${value}`);
  }
  return lines;
}

function rankLabels(row: RankRow): string {
  return `{rank="${row.rank}",device="${row.device}"}`;
}

/** The job's gauges, prefixed `prefix` (see the module comment). */
export function metricsText(job: WatchedJob, prefix = 'allot_'): string {
  const rows = job.rows();
  const each = (value: (row: RankRow) => number | null): [string, number][] =>
    rows.flatMap((row) => {
      const v = value(row);
      return v === null ? [] : [[rankLabels(row), v] as [string, number]];
    });
  const lines: string[] = [];
  for (const family of STAT_FAMILIES) {
    for (const pool of STAT_POOLS) {
      const key = `${family}.${pool}.current`;
      lines.push(
        ...gauge(
          `${prefix}${family}_${pool}_current`,
          `memory_stats()["${key}"] at the rank's latest snapshot: ${FAMILY_HELP[family]}.`,
          each((row) => row.stats[family][pool]),
        ),
      );
    }
  }
  lines.push(
    ...gauge(
      `${prefix}reserved_bytes_all_peak`,
      'memory_stats()["reserved_bytes.all.peak"] within the snapshots watched: the most bytes PyTorch reserved, as recorded.',
      each((row) => row.recordedPeakReservedBytes),
    ),
    ...gauge(
      `${prefix}num_ooms`,
      'memory_stats()["num_ooms"] within the snapshots watched: out-of-memory errors recorded.',
      each((row) => row.ooms),
    ),
    ...gauge(
      `${prefix}replayed_peak_reserved_bytes`,
      "Peak reserved bytes of the lab's replay of the rank's merged timeline under its recorded settings.",
      each((row) => row.peakReservedBytes),
    ),
    ...gauge(
      `${prefix}advised_peak_reserved_bytes`,
      "Peak reserved bytes the lab predicts for the rank under the job's advice so far (allot_advice_info).",
      each((row) => row.advisedPeakReservedBytes),
    ),
    ...gauge(
      `${prefix}watch_step`,
      "The training step of the rank's latest snapshot, as its name states it.",
      each((row) => row.step),
    ),
    ...gauge(
      `${prefix}watch_entries`,
      "Trace entries merged into the rank's timeline, each counted once.",
      each((row) => row.entries),
    ),
    ...gauge(
      `${prefix}watch_gaps`,
      "Breaks in the rank's timeline: a snapshot whose window does not reach back to the one before.",
      each((row) => row.gaps.length),
    ),
    ...gauge(
      `${prefix}watch_skipped_files`,
      'Files skipped as damaged, truncated or out of order.',
      [['', job.skipped.length]],
    ),
  );
  const advice = job.advice;
  lines.push(
    ...gauge(
      `${prefix}advice_info`,
      'The job\'s advice so far: the PYTORCH_CUDA_ALLOC_CONF the tuner picks for every rank ("" for PyTorch\'s defaults).',
      advice === null ? [] : [[`{alloc_conf="${label(advice.config)}"}`, 1]],
    ),
  );
  return `${lines.join('\n')}\n`;
}
