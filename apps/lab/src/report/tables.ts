/**
 * The text the lab prints: a table per workload, PyTorch's own figures beside ours, the targets.
 */
import type { OomFigures } from '../analysis/post-mortem';
import { TUNED_ROW } from '../analysis/registry';
import type { Fidelity, LabResults, WorkloadResult } from '../run';
import {
  formatBytes,
  formatColumns,
  formatCount,
  formatPercent,
  formatRatio,
  triedToAllocate,
  wallOrigin,
} from '../units';
import { dumpLines } from './dump-text';
import { postMortemLines } from './post-mortem-text';

export { formatColumns };

import { budgetLines } from '../workloads';

/** Column titles of a workload table, in the terminal and in the report. */
export const TABLE_HEADER = [
  'allocator',
  'peak live',
  'peak reserved',
  'ratio',
  'ext. frag @ peak',
  'failed',
  'ns/event',
  'segments',
] as const;

/**
 * The cells of a workload table: one row per allocator, then PyTorch's recorded figures when the
 * trace carries them. Shared by the terminal table and the HTML report.
 */
export function tableRows(workload: WorkloadResult): string[][] {
  const rows = workload.rows.map((row) => [
    row.note ? `${row.allocator} (${row.note})` : row.allocator,
    formatBytes(row.peakLiveBytes),
    formatBytes(row.peakReservedBytes),
    formatRatio(row.ratio),
    formatPercent(row.externalFragmentationAtPeak),
    row.recordedOomsFailed
      ? `${formatCount(row.failures)} +${formatCount(row.recordedOomsFailed)} oom`
      : formatCount(row.failures),
    Number.isFinite(row.nsPerEvent) ? row.nsPerEvent.toFixed(0) : '–',
    row.segments
      ? `${formatCount(row.segments.acquired)}${row.segments.grown > 0 ? ` +${formatCount(row.segments.grown)} grown` : ''}`
      : '–',
  ]);
  if (workload.torch) {
    const t = workload.torch;
    rows.push([
      'PyTorch (recorded)',
      t.peakAllocatedBytes !== undefined ? formatBytes(t.peakAllocatedBytes) : '–',
      t.peakReservedBytes !== undefined ? formatBytes(t.peakReservedBytes) : '–',
      t.peakReservedBytes !== undefined && workload.peakLiveBytes > 0
        ? formatRatio(t.peakReservedBytes / workload.peakLiveBytes)
        : '–',
      '–',
      t.ooms !== undefined ? `${formatCount(t.ooms)} oom` : '–',
      '–',
      t.segmentAllocs !== undefined ? formatCount(t.segmentAllocs) : '–',
    ]);
  }
  return rows;
}

/** The table of one workload, with its title lines (a state dump: its own answer, `dump-text.ts`). */
export function formatWorkload(workload: WorkloadResult): string {
  if (workload.dump) return dumpLines(workload, holderLines(workload, 'at the dump')).join('\n');
  const lines: string[] = [];
  lines.push(`${workload.title}`);
  lines.push(`  ${workload.description}`);
  lines.push(
    `  ${formatCount(workload.events)} events (${formatCount(workload.allocs)} allocations, ` +
      `${formatCount(workload.frees)} frees), peak ${formatCount(workload.peakLiveBlocks)} live ` +
      `blocks, largest request ${formatBytes(workload.maxSize)}`,
  );
  if (workload.budget)
    lines.push(`  budget: ${budgetLines(workload.budget, workload.peakLiveBytes)}`);
  const pre = workload.meta.preexistingBlocks;
  const start = workload.meta.startState;
  if (start === 'exact' || start === 'estimated') {
    lines.push(
      `  starting state (${start}): ${formatCount(typeof pre === 'number' ? pre : 0)} block${pre === 1 ? '' : 's'} ` +
        `(${formatBytes(workload.meta.preexistingBytes as number)}) live when the recording began, in ` +
        `${formatBytes(workload.torch?.reservedAtStartBytes ?? 0)} reserved; caching rows restore it, ` +
        'the others allocate those blocks first',
    );
  } else if (typeof pre === 'number' && pre > 0) {
    lines.push(
      `  ${formatCount(pre)} blocks (${formatBytes(workload.meta.preexistingBytes as number)}) ` +
        'were freed in the recording but allocated before it: modelled as live from the start',
    );
  }
  lines.push('');
  const cells: readonly (readonly string[])[] = [TABLE_HEADER, ...tableRows(workload)];
  for (const line of formatColumns(cells)) lines.push(`  ${line}`);
  const untimed = workload.rows.find((row) => row.untimed !== undefined)?.untimed;
  if (untimed !== undefined) lines.push(`  ns/event –: ${untimed}`);
  if (workload.torch) {
    const t = workload.torch;
    const parts = ['  PyTorch row: figures the recording states'];
    if (t.segmentAllocs !== undefined) {
      parts.push(
        `(${formatCount(t.segmentAllocs)} segment allocations and ${formatCount(t.segmentFrees ?? 0)} ` +
          `frees in the window; reserved at the end ${formatBytes(t.reservedAtEndBytes ?? 0)}` +
          `${t.allocConf ? `; PYTORCH_CUDA_ALLOC_CONF=${t.allocConf}` : ''})`,
      );
    }
    lines.push(parts.join(' '));
    if (t.fidelity) lines.push(...fidelityLines(t.fidelity));
    for (const oom of t.recordedOoms ?? []) lines.push(...oomLines(oom));
  }
  const advice = workload.explain?.diagnosis.advice;
  if (advice !== undefined) lines.push('', `  ${advice}`);
  lines.push(...holderLines(workload));
  const failed = workload.rows.filter((row) => row.failures > 0);
  for (const row of failed) {
    lines.push(
      `  ${row.allocator}: ${formatCount(row.failures)} allocations failed, the first at event ` +
        `${formatCount(row.firstFailure + 1)}`,
    );
  }
  return lines.join('\n');
}

/** Who holds the memory at the peak (`at`), by source line, when the trace has stacks. */
function holderLines(workload: WorkloadResult, at = 'at the peak'): string[] {
  const peak = workload.explain?.peak;
  if (peak === undefined || peak.bySource.length === 0) return [];
  const cells = peak.bySource.map((holder, i) => [
    `${i + 1}.`,
    formatBytes(holder.bytes),
    formatPercent(peak.liveBytes > 0 ? holder.bytes / peak.liveBytes : 0),
    `${formatCount(holder.blocks)} block${holder.blocks === 1 ? '' : 's'}`,
  ]);
  return [
    '',
    `  who holds the memory ${at} (${formatBytes(peak.liveBytes)} live), by the innermost ` +
      'frame of your own code in each block’s stack (else what made the block):',
    ...formatColumns(cells).map((line, i) => `    ${line}  ${peak.bySource[i]!.frame}`),
  ];
}

/** A recorded out-of-memory error, in short, with the short post-mortem under it. */
export function oomLines(oom: OomFigures): string[] {
  return [...recordedOomLines(oom), ...postMortemLines(oom)];
}

/** A recorded out-of-memory error: the request, the device, PyTorch's figures, the wall. */
export function recordedOomLines(oom: OomFigures): string[] {
  const r = oom.recorded;
  const free =
    r.deviceFreeBytes === null
      ? 'no device_free recorded'
      : `${formatBytes(r.deviceFreeBytes)} free on the device`;
  const wall =
    oom.capacityBytes === null
      ? 'the wall is unknown (state it with --memory)'
      : `the wall: ${formatBytes(oom.capacityBytes)} (${wallOrigin(oom.capacitySource)})`;
  const lines = [
    `  out of memory recorded at entry ${formatCount(r.event)}: a ${formatBytes(r.sizeBytes)} request` +
      `${triedToAllocate(r.sizeBytes, r.allocationBytes)} on stream ${r.stream}, ${free}; PyTorch had ${formatBytes(r.reservedBytes)} reserved, ` +
      `${formatBytes(r.allocatedBytes)} allocated, so ${formatBytes(Math.max(0, r.reservedBytes - r.allocatedBytes))} ` +
      `reserved but unallocated; ${wall}`,
  ];
  if (
    oom.capacitySource === 'oom' &&
    r.deviceFreeBytes !== null &&
    r.deviceFreeBytes >= r.sizeBytes
  ) {
    lines.push(
      `    the device had room for the request: PyTorch's own cap was lower, a per-process memory ` +
        'fraction (torch.cuda.set_per_process_memory_fraction) or another limit; state it with ' +
        '--memory and --fraction, or record the job with allot-lab record, which writes the card ' +
        'and the fraction beside each snapshot',
    );
  }
  if (oom.at !== undefined) lines.push(`    requested at ${oom.at}`);
  else if (oom.madeBy !== undefined) lines.push(`    requested by ${oom.madeBy}`);
  if (oom.problem) lines.push(`    the entry has ${oom.problem}: its figures are as recorded`);
  return lines;
}

/** How faithfully the recorded settings replay: peak reserved and PyTorch's segment decisions. */
export function fidelityLines(f: Fidelity): string[] {
  const recorded =
    f.recordedPeakSource === 'total-reserved'
      ? 'the largest Total Reserved'
      : 'the peak within the recorded window';
  const error =
    f.error === null
      ? 'no reserved bytes were recorded, so there is no error to state'
      : `error ${f.error >= 0 ? '+' : '−'}${formatPercent(Math.abs(f.error))}`;
  const setAside =
    f.capacitySetAside === undefined
      ? ''
      : `, without --capacity ${formatBytes(f.capacitySetAside)} (the recording did not run under it; the table's row did)`;
  const lines = [
    `  fidelity: ${f.allocator} replays ${f.assumedSettings ? "PyTorch's defaults (the recording does not state its settings)" : `the recorded settings (PYTORCH_CUDA_ALLOC_CONF='${f.config}')`}${setAside}`,
    `    peak reserved: predicted ${formatBytes(f.predictedPeakReservedBytes)}, recorded ` +
      `${formatBytes(f.recordedPeakReservedBytes)} (${recorded}): ${error}`,
  ];
  const s = f.segments;
  if (s && s.recorded === 0) {
    lines.push(
      `    segment decisions in the window: PyTorch none recorded, ours ${formatCount(s.predicted)} ` +
        `(${formatBytes(s.predictedBytes)}): nothing to match`,
    );
  } else if (s) {
    lines.push(
      `    segment decisions in the window: PyTorch ${formatCount(s.recorded)} (${formatBytes(s.recordedBytes)}), ` +
        `ours ${formatCount(s.predicted)} (${formatBytes(s.predictedBytes)}); ${formatCount(s.matched)} of ` +
        `${formatCount(s.recorded)} match in order (${formatPercent(s.matchFraction)})`,
    );
    const d = s.firstDifference;
    lines.push(
      d
        ? `    first difference: decision ${formatCount(d.index + 1)}, at event ${formatCount(d.event + 1)}: ` +
            `PyTorch ${formatBytes(d.recordedSize)}, ours ${d.predictedSize === null ? 'none' : formatBytes(d.predictedSize)}`
        : s.predicted > s.recorded
          ? `    PyTorch's decisions all match, in order; ours add ${formatCount(s.predicted - s.recorded)} more`
          : '    every segment decision is the same, in the same order',
    );
  }
  const r = f.releases;
  if (r) {
    const wall =
      r.wallBelowBytes === null
        ? ''
        : `; ${formatCount(r.atWall)} of them when the next cudaMalloc would have passed the recorded peak: ` +
          `the card's limit lies between ${formatBytes(r.wallFromBytes)} and ${formatBytes(r.wallBelowBytes)} ` +
          `(${formatCount(r.wallFromBytes)} to ${formatCount(r.wallBelowBytes)} B); ` +
          'state it with --memory for other settings';
    lines.push(
      `    the recording gave back ${formatCount(r.segments)} segments in ${formatCount(r.bursts)} bursts, ` +
        `replayed at the same places${wall}`,
    );
  }
  return lines;
}

/** Every table, the targets and where the report went. */
export function formatResults(results: LabResults, reportPath: string | null): string {
  const parts = results.workloads.map(formatWorkload);
  const footer: string[] = [];
  // A state dump prints no table of its own kind: the note on the table's figures is for the others.
  if (results.workloads.some((workload) => workload.dump === undefined)) {
    footer.push(
      'peak reserved: the high-water mark for ranges (first/best/good fit, buddy, slab+best-fit), ' +
        'bytes held from the source for the caching pools; ratio = peak reserved / peak live.',
    );
  }
  if (results.workloads.some((w) => w.rows.some((row) => row.allocator === TUNED_ROW))) {
    footer.push(
      `${TUNED_ROW}: the setting allot-lab tune recommends for the trace (in brackets), the one the recommendation names.`,
    );
  }
  if (results.targets.length > 0) {
    footer.push('');
    footer.push('Targets');
    for (const line of formatColumns(
      results.targets.map((t) => [t.name, t.display, t.goal, t.met ? 'met' : 'MISSED']),
    ))
      footer.push(`  ${line}`);
  }
  if (results.failures > 0) {
    footer.push('');
    footer.push(
      `${formatCount(results.failures)} allocations failed in this run (exit status 1): ` +
        'a row above ran out of memory at this capacity.',
    );
  }
  if (reportPath) {
    footer.push('');
    footer.push(`Report: ${reportPath}`);
  }
  return `${parts.join('\n\n')}\n\n${footer.join('\n')}\n`;
}
