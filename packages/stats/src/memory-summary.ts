/**
 * `memorySummary()`: a readable table of `memoryStats()`, laid out like
 * `torch.cuda.memory_summary()` (current, peak, total allocated and total freed per metric, split
 * by pool when the allocator reports pools), followed by allot's fragmentation line.
 */
import { formatBytes } from '@allot/core';
import { externalFragmentation } from './fragmentation';
import { type MemoryStats, memoryStats } from './memory-stats';
import type { StatsAllocator } from './with-stats';

export interface MemorySummaryOptions {
  /** Leave out the per-pool rows. @defaultValue false */
  readonly abbreviated?: boolean;
}

/** Width of the table between its borders, in characters. */
const WIDTH = 75;
const SEPARATOR = `|${'-'.repeat(WIDTH)}|`;
const DOUBLE = `|${'='.repeat(WIDTH)}|`;
const SIZE_UNITS = ['B  ', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;
const COUNT_UNITS = [' ', 'K', 'M', 'G', 'T'] as const;

/** A byte figure in the unit its row's peak suggests (so a row reads in one unit). */
function formatSize(value: number, reference: number): string {
  let unit = 0;
  let scaled = value;
  let ref = reference;
  while (unit < SIZE_UNITS.length - 1 && ref >= 768 * 1024) {
    scaled /= 1024;
    ref /= 1024;
    unit++;
  }
  return `${Math.floor(scaled).toString().padStart(6)} ${SIZE_UNITS[unit]}`;
}

function formatCount(value: number, reference: number): string {
  let unit = 0;
  let scaled = value;
  let ref = reference;
  while (unit < COUNT_UNITS.length - 1 && ref >= 750 * 1000) {
    scaled /= 1000;
    ref /= 1000;
    unit++;
  }
  return `${Math.floor(scaled).toString().padStart(7)} ${COUNT_UNITS[unit]}`;
}

function center(text: string): string {
  const left = Math.floor((WIDTH - text.length) / 2);
  return `|${' '.repeat(Math.max(0, left))}${text}${' '.repeat(Math.max(0, WIDTH - left - text.length))}|`;
}

function row(label: string, cells: readonly string[]): string {
  return `| ${label.padEnd(21)} | ${cells.map((c) => c.padStart(10)).join(' | ')} |`;
}

function metricRows(
  stats: MemoryStats,
  label: string,
  family: string,
  bytes: boolean,
  pools: boolean,
): string[] {
  const lines: string[] = [];
  const groups: [string, string][] = [[label, 'all']];
  if (pools)
    groups.push(['      from large pool', 'large_pool'], ['      from small pool', 'small_pool']);
  for (const [text, pool] of groups) {
    const get = (figure: string) =>
      stats[`${family}.${pool}.${figure}`] ?? stats[`${family}.${figure}`] ?? 0;
    const reference = get('peak');
    const format = bytes ? formatSize : formatCount;
    lines.push(
      row(
        text,
        ['current', 'peak', 'allocated', 'freed'].map((f) => format(get(f), reference)),
      ),
    );
  }
  return lines;
}

/** A text table like `torch.cuda.memory_summary()` for an allocator wrapped by `withStats`. */
export function memorySummary(stats: StatsAllocator, options: MemorySummaryOptions = {}): string {
  const s = memoryStats(stats);
  const pools = !options.abbreviated && 'allocated_bytes.small_pool.current' in s;
  const lines: string[] = [
    DOUBLE,
    center(`allot memory summary, device ID ${stats.device}`),
    SEPARATOR,
    center(`Out-of-memory errors: ${s.num_ooms}   |   allocation retries: ${s.num_alloc_retries}`),
    DOUBLE,
    row('       Metric', ['Cur Usage', 'Peak Usage', 'Tot Alloc', 'Tot Freed']),
    SEPARATOR,
    ...metricRows(s, 'Allocated memory', 'allocated_bytes', true, pools),
    SEPARATOR,
    ...metricRows(s, 'Active memory', 'active_bytes', true, pools),
    SEPARATOR,
    ...metricRows(s, 'Requested memory', 'requested_bytes', true, pools),
    SEPARATOR,
    ...metricRows(s, 'Reserved memory', 'reserved_bytes', true, pools),
    SEPARATOR,
    ...metricRows(s, 'Non-releasable memory', 'inactive_split_bytes', true, pools),
    SEPARATOR,
    ...metricRows(s, 'Allocations', 'allocation', false, pools),
    SEPARATOR,
    ...metricRows(s, 'Active allocs', 'active', false, pools),
    SEPARATOR,
    ...metricRows(s, 'Reserved segments', 'segment', false, pools),
    SEPARATOR,
    ...metricRows(s, 'Non-releasable allocs', 'inactive_split', false, pools),
    SEPARATOR,
    ...metricRows(s, 'Oversize allocations', 'oversize_allocations', false, false),
    ...metricRows(s, 'Oversize segments', 'oversize_segments', false, false),
    DOUBLE,
  ];
  const usage = stats.usage();
  const figures = stats.fragmentation();
  const free = figures?.freeBytes ?? usage.freeBytes;
  const largest = figures?.largestFreeBlock ?? usage.largestFreeBlock;
  const ext = figures?.externalFragmentation ?? externalFragmentation(largest, free);
  lines.push(
    center(
      `free ${formatBytes(free)} in ${figures?.freeBlockCount ?? usage.freeBlockCount} ranges, ` +
        `largest ${formatBytes(largest)}, external fragmentation ${(ext * 100).toFixed(1)}%`,
    ),
    DOUBLE,
  );
  return lines.join('\n');
}
