/**
 * Rendering a run: per-workload tables (terminal text and Markdown), the targets table, and the
 * generated block of BENCHMARKS.md. Pure functions of a {@link BenchRun}, so they are tested
 * without running anything.
 */
import { formatBytes } from '@allot/core';
import type { CellResult } from './measure';
import { type BenchRun, cellOf, type WorkloadRecord } from './results';
import { evaluateTargets } from './targets';

/** Markers of the generated block of BENCHMARKS.md; everything outside them is kept as is. */
export const BLOCK_BEGIN = '<!-- bench:begin -->';
export const BLOCK_END = '<!-- bench:end -->';

/** A table: header cells and rows of cells; `numeric[i]` right-aligns column i. */
export interface Grid {
  readonly headers: readonly string[];
  readonly rows: readonly (readonly string[])[];
  readonly numeric: readonly boolean[];
}

const THING = 'thi.ng-malloc';
const BUMP = 'bump';
const AS_TLSF = 'as-tlsf';

/** `1234.5` → `1,235`; below 100 one decimal. */
export function formatNs(ns: number): string {
  return ns >= 100 ? Math.round(ns).toLocaleString('en-US') : ns.toFixed(1);
}

/** A ratio like `3.2×`, `540×`. */
export function formatRatio(ratio: number): string {
  if (ratio >= 100) return `${Math.round(ratio).toLocaleString('en-US')}×`;
  if (ratio >= 10) return `${ratio.toFixed(1)}×`;
  return `${ratio.toFixed(2)}×`;
}

/** capacity / peak live, with `≤` when the search gave an upper bound. */
export function formatCapacity(cell: CellResult): string {
  if (cell.capacityRatio === null) {
    if (cell.capacityStatus === 'none') return 'does not fit';
    return '—';
  }
  const prefix = cell.capacityStatus === 'exact' ? '' : '≤ ';
  return `${prefix}${cell.capacityRatio.toFixed(3)}`;
}

/** The grid of one workload: one row per allocator measured on it. */
export function workloadGrid(run: BenchRun, workload: WorkloadRecord): Grid {
  const pairs = workload.kind === 'pairs';
  const headers = [
    'allocator',
    'ns/op',
    ...(pairs ? ['ns/pair'] : []),
    '× bump',
    '× as-tlsf',
    'speed-up vs thi.ng',
    'capacity / peak live',
    'failed allocs',
  ];
  const bump = cellOf(run, BUMP, workload.id);
  const thing = cellOf(run, THING, workload.id);
  const tlsf = cellOf(run, AS_TLSF, workload.id);
  const rows: string[][] = [];
  for (const allocator of run.allocators) {
    const cell = cellOf(run, allocator.name, workload.id);
    if (!cell) continue;
    const ns = cell.nsPerOp;
    const star = cell.partial ? '*' : '';
    rows.push([
      allocator.name,
      ns === null ? '—' : `${formatNs(ns)}${star}`,
      ...(pairs ? [ns === null ? '—' : `${formatNs(2 * ns)}${star}`] : []),
      ns !== null && bump?.nsPerOp ? formatRatio(ns / bump.nsPerOp) : '—',
      ns !== null && tlsf?.nsPerOp ? formatRatio(ns / tlsf.nsPerOp) : '—',
      ns !== null && thing?.nsPerOp ? formatRatio(thing.nsPerOp / ns) : '—',
      formatCapacity(cell),
      String(cell.failures),
    ]);
  }
  return { headers, rows, numeric: headers.map((_, i) => i > 0) };
}

/** Plain-text table with aligned columns. */
export function renderText(grid: Grid): string {
  const widths = grid.headers.map((header, i) =>
    Math.max(header.length, ...grid.rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (grid.numeric[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [
    line(grid.headers),
    widths.map((w) => '─'.repeat(w)).join('  '),
    ...grid.rows.map(line),
  ].join('\n');
}

/** Markdown table. */
export function renderMarkdown(grid: Grid): string {
  const escapeCell = (cell: string) => cell.replace(/\|/g, '\\|');
  return [
    `| ${grid.headers.map(escapeCell).join(' | ')} |`,
    `| ${grid.numeric.map((n) => (n ? '---:' : '---')).join(' | ')} |`,
    ...grid.rows.map((row) => `| ${row.map(escapeCell).join(' | ')} |`),
  ].join('\n');
}

/** One line describing a workload: events, peak live bytes, what is timed. */
export function describeWorkload(workload: WorkloadRecord): string {
  const s = workload.summary;
  const timed =
    workload.timedFrom > 0
      ? `timed from event ${workload.timedFrom.toLocaleString('en-US')} (steady state)`
      : 'all events timed';
  return (
    `${s.events.toLocaleString('en-US')} events, ${s.allocs.toLocaleString('en-US')} allocations, ` +
    `peak live ${formatBytes(s.peakLiveBytes)} in ${s.peakLiveBlocks.toLocaleString('en-US')} blocks, ` +
    `sizes ${s.minSize}–${s.maxSize} B; ${timed}`
  );
}

/** Everything printed to the terminal after a run. */
export function renderTerminal(run: BenchRun): string {
  const out: string[] = [];
  for (const allocator of run.allocators) {
    if (allocator.status === 'unavailable')
      out.push(`skipped row ${allocator.name}: ${allocator.reason}`);
  }
  for (const note of run.notes) out.push(note);
  for (const error of run.errors) {
    out.push(
      `error in ${error.allocator}${error.workload ? ` on ${error.workload}` : ''}: ${error.message}`,
    );
  }
  for (const workload of run.workloads) {
    out.push('', `${workload.title}`, `  ${describeWorkload(workload)}`, '');
    out.push(renderText(workloadGrid(run, workload)));
    const skipped = run.skipped.filter((s) => s.workload === workload.id);
    for (const s of skipped) out.push(`  (${s.allocator} not run: ${s.reason})`);
  }
  const targets = evaluateTargets(run);
  out.push('', 'Targets', '');
  out.push(
    renderText({
      headers: ['target', 'measured', 'target', 'status'],
      rows: targets.map((t) => [t.target, t.measured, t.limit, t.status]),
      numeric: [false, false, false, false],
    }),
  );
  out.push('', '* stopped at its time budget: ns/op over the events replayed before the deadline.');
  return out.join('\n');
}

/** The Markdown between the markers (markers included). */
/** How a run's figures were taken, for the command line of the report. */
function runsLine(settings: BenchRun['settings']): string {
  // Older results have no `processes`: one process each.
  const processes = settings.processes ?? 1;
  return processes > 1
    ? `${processes} worker processes per allocator, ${settings.runs} timed runs each; the median of their medians`
    : `${settings.runs} timed runs per cell, median`;
}

export function renderMarkdownBlock(run: BenchRun): string {
  const out: string[] = [BLOCK_BEGIN];
  out.push(
    '<!-- Generated by apps/bench (`pnpm bench`); edits between these markers are overwritten. -->',
    '',
    '## Allocator benchmarks',
    '',
    `- Command: \`${run.command}\` (${run.settings.quick ? 'quick mode' : 'full run'}, ${runsLine(run.settings)})`,
    `- Node ${run.node} on ${run.platform}; CPU: ${run.cpu}, ${run.cores} cores`,
    `- Date: ${run.date}; the run took ${Math.round(run.durationSeconds)} s`,
    '',
    'How to read the tables: **ns/op** is the median CPU time of the process per event (an allocation or a free) over ' +
      'the timed part of the workload, each allocator measured in its own processes after a warm-up ' +
      '(with several processes, the median of their medians); ' +
      '**× bump** divides by the bump allocator (the floor) in the same run, **× as-tlsf** by ' +
      "AssemblyScript's runtime TLSF compiled to wasm (the peer to beat); **speed-up vs thi.ng** " +
      'is `@thi.ng/malloc`’s ns/op divided by the row’s; **capacity / peak live** is the smallest ' +
      'capacity on which the workload runs with no failed allocation (binary search to 0.1 % in a full run, 0.5 % in quick mode; a ' +
      'fresh allocator per probe, alignment 8) divided by the peak live bytes; **failed allocs** ' +
      'counts failures at the timing capacity (2.5 × peak live rounded up to a power of two, at least 1 MiB). ' +
      'A `*` marks a row stopped at its time budget (ns/op over the events it replayed); `≤` marks ' +
      'a capacity search that ran out of time (an upper bound); `—` a figure not measured.',
    '',
    '### Targets',
    '',
  );
  const targets = evaluateTargets(run);
  out.push(
    renderMarkdown({
      headers: ['target', 'from', 'measured', 'target', 'status'],
      rows: targets.map((t) => [t.target, t.source, t.measured, t.limit, t.status]),
      numeric: [false, false, false, false, false],
    }),
  );
  const missed = targets.filter((t) => t.status !== 'met').length;
  out.push(
    '',
    missed === 0
      ? 'Every target is met in this run.'
      : `${missed} of ${targets.length} targets are missed or not measured in this run; a target is ` +
          '"not measured" when its row was skipped (package not built yet) or its figure is partial.',
    '',
    '### Rows',
    '',
  );
  out.push(
    renderMarkdown({
      headers: ['row', 'built as', 'status'],
      rows: run.allocators.map((a) => [
        a.name,
        `\`${a.recipe}\``,
        a.status === 'measured' ? (a.peer ? 'peer' : 'measured') : `skipped: ${a.reason}`,
      ]),
      numeric: [false, false, false],
    }),
  );
  if (run.notes.length > 0 || run.errors.length > 0) {
    out.push('');
    for (const note of run.notes) out.push(`- ${note}`);
    for (const e of run.errors) {
      out.push(`- Error in ${e.allocator}${e.workload ? ` on ${e.workload}` : ''}: ${e.message}`);
    }
  }
  for (const workload of run.workloads) {
    out.push('', `### ${workload.title}`, '', describeWorkload(workload), '');
    out.push(renderMarkdown(workloadGrid(run, workload)));
    const notes = run.cells.filter((c) => c.workload === workload.id && c.note);
    const skipped = run.skipped.filter((s) => s.workload === workload.id);
    if (notes.length > 0 || skipped.length > 0) out.push('');
    for (const c of notes) out.push(`- ${c.allocator}: ${c.note}`);
    for (const s of skipped) out.push(`- ${s.allocator} not run: ${s.reason}`);
  }
  out.push('', BLOCK_END);
  return out.join('\n');
}

/** The two comment lines that delimit a generated block of BENCHMARKS.md. */
export interface BlockMarkers {
  readonly begin: string;
  readonly end: string;
}

/**
 * Puts `block` into the existing BENCHMARKS.md text: replaces the generated block between
 * `markers` when there is one, else appends it; every hand-written section outside the markers is
 * kept. With no existing file, starts one with a title.
 */
export function mergeBenchmarksFile(
  existing: string | null,
  block: string,
  markers: BlockMarkers = { begin: BLOCK_BEGIN, end: BLOCK_END },
): string {
  if (existing === null || existing.trim() === '') {
    return `# Benchmarks\n\nFigures from the project's benchmark programs. Each section states the command, machine and date that produced it.\n\n${block}\n`;
  }
  const begin = existing.indexOf(markers.begin);
  const end = existing.indexOf(markers.end, Math.max(0, begin));
  if (begin >= 0 && end > begin) {
    return existing.slice(0, begin) + block + existing.slice(end + markers.end.length);
  }
  return `${existing.replace(/\s*$/, '')}\n\n${block}\n`;
}
