/**
 * A state dump as the terminal prints it under `replay`: what the file is, reserved against
 * allocated, the segments with the most free bytes, who holds the memory, and the estimate per
 * setting, marked as one, with its assumption and the advice.
 */
import type { DumpFigures } from '../analysis/state-dump';
import type { WorkloadResult } from '../run';
import { formatBytes, formatColumns, formatCount, formatPercent, formatRatio } from '../units';

/** Segments listed, the most free bytes first. */
export const SEGMENT_ROWS = 10;

/** The segments with the most free bytes, as a table (the terminal's and the report's cells). */
export function segmentTable(dump: DumpFigures, rows = SEGMENT_ROWS): string[][] {
  const shown = [...dump.bySegment]
    .sort((a, b) => b.freeBytes - a.freeBytes || a.address - b.address)
    .slice(0, rows);
  return [
    ['segment', 'pool', 'stream', 'size', 'allocated', 'free', 'largest free', 'free blocks'],
    ...shown.map((segment) => [
      `0x${segment.address.toString(16)}${segment.expandable ? ' (expandable)' : ''}`,
      segment.pool,
      String(segment.stream),
      formatBytes(segment.size),
      formatBytes(segment.allocatedBytes),
      formatBytes(segment.freeBytes),
      formatBytes(segment.largestFreeBytes),
      formatCount(segment.freeBlocks),
    ]),
  ];
}

/** The estimate per setting, as a table: each caching row, and the dump itself above them. */
export function estimateTable(dump: DumpFigures): string[][] {
  const live = dump.estimate.bytes;
  const ratio = (bytes: number) => (live > 0 ? formatRatio(bytes / live) : '–');
  const own = dump.estimate.own?.allocator;
  return [
    ['setting', 'reserved', 'ratio', 'segments', 'failed'],
    [
      'the dump, as recorded',
      formatBytes(dump.reservedBytes),
      ratio(dump.reservedBytes),
      formatCount(dump.segments),
      '–',
    ],
    ...dump.estimate.rows.map((row) => [
      `${row.allocator}${row.config === '' ? ' (defaults)' : ` (${row.config})`}${row.allocator === own ? ', its own settings' : ''}`,
      `${formatBytes(row.peakReservedBytes)} (estimated)`,
      ratio(row.peakReservedBytes),
      formatCount(row.segmentCalls),
      formatCount(row.failures),
    ]),
  ];
}

/** How the estimate under the dump's own settings stands against the dump, in a sentence. */
export function ownEstimateLine(dump: DumpFigures): string | null {
  const own = dump.estimate.own;
  if (own === undefined) return null;
  const difference = own.dumpReservedBytes - own.peakReservedBytes;
  const settings = own.assumedSettings
    ? "PyTorch's defaults (the dump does not state its settings)"
    : 'its own settings';
  if (difference === 0) {
    return `Under ${settings} the estimate is ${formatBytes(own.peakReservedBytes)}, exactly what the dump holds: whatever was freed before it left no hole that costs a segment.`;
  }
  return difference > 0
    ? `Under ${settings} the estimate is ${formatBytes(own.peakReservedBytes)}; the dump holds ${formatBytes(difference)} more: what the allocations freed before it left (holes, and segments they made PyTorch allocate).`
    : `Under ${settings} the estimate is ${formatBytes(own.peakReservedBytes)}, ${formatBytes(-difference)} more than the dump holds: allocating in address order from empty packs these blocks worse than the program's own order did.`;
}

/** `n` things, `n` written out: `1 segment`, `3 segments`. */
function count(n: number, thing: string): string {
  return `${formatCount(n)} ${thing}${n === 1 ? '' : 's'}`;
}

/** Why a dump without stacks says nothing of who holds the memory. */
export const NO_STACKS =
  "who holds the memory: the dump holds no stacks (PyTorch keeps a block's stack only while it records " +
  'history: torch.cuda.memory._record_memory_history(stacks="python") before the allocations)';

/** What the dump is and its figures, in lines (unindented): the terminal's and the report's. */
export function dumpSummary(workload: WorkloadResult): string[] {
  const dump = workload.dump!;
  const conf = workload.meta.torchAllocConf;
  return [
    `A state dump: the segments and blocks of one moment, with no allocation history (torch.cuda.memory._snapshot() ` +
      `without _record_memory_history(), or taken at an out-of-memory error); ${typeof conf === 'string' ? `recorded with PYTORCH_CUDA_ALLOC_CONF='${conf}'` : 'no settings recorded'}`,
    `Reserved ${formatBytes(dump.reservedBytes)} in ${count(dump.segments, 'segment')}; allocated ${formatBytes(dump.allocatedBytes)} ` +
      `in ${count(dump.allocatedBlocks, 'block')} (${formatBytes(dump.requestedBytes)} requested)` +
      (dump.pendingFreeBlocks > 0
        ? `; ${formatBytes(dump.pendingFreeBytes)} in ${count(dump.pendingFreeBlocks, 'block')} freed and waiting for another stream`
        : ''),
    `Free ${formatBytes(dump.freeBytes)} in ${count(dump.freeBlocks, 'block')}: ${formatBytes(dump.fragmentedBytes)} fragmented ` +
      `(in segments that hold live blocks), ${formatBytes(dump.cachedBytes)} cached (whole free segments); ` +
      (dump.largestFree
        ? `the largest free block ${formatBytes(dump.largestFree.bytes)}, external fragmentation ${formatPercent(dump.externalFragmentation)}`
        : 'no free block'),
  ];
}

/** What a dump with no live block says instead of an estimate. */
export const NO_LIVE_BLOCK =
  'No block is live: every reserved byte is free, so there is nothing to estimate under another setting.';

/** The lines of one state dump's answer (see the module comment). */
export function dumpLines(workload: WorkloadResult, holders: readonly string[]): string[] {
  const dump = workload.dump!;
  const explain = workload.explain;
  const lines = [
    workload.title,
    `  ${workload.description}`,
    ...dumpSummary(workload).map((line) => `  ${line}`),
    '',
    `  segments, the most free first (${formatCount(Math.min(SEGMENT_ROWS, dump.segments))} of ${formatCount(dump.segments)}):`,
    ...formatColumns(segmentTable(dump)).map((line) => `    ${line}`),
    ...(holders.length > 0 ? holders : ['', `  ${NO_STACKS}`]),
  ];
  if (dump.estimate.rows.length > 0) {
    lines.push(
      '',
      `  what the same live blocks would need under each setting, an estimate: ${dump.estimate.assumes}`,
      ...formatColumns(estimateTable(dump)).map((line) => `    ${line}`),
    );
    const own = ownEstimateLine(dump);
    if (own !== null) lines.push(`  ${own}`);
  } else if (dump.estimate.blocks === 0) {
    lines.push('', `  ${NO_LIVE_BLOCK}`);
  }
  const advice = explain?.diagnosis.advice;
  if (advice !== undefined) lines.push('', `  ${advice}`);
  if (explain !== undefined) lines.push('', `  Action: ${explain.diagnosis.action}`);
  return lines;
}
