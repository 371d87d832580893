/**
 * The raw workloads' results: per-round figures, ratios taken within each round, the growth from
 * 5,000 to 100,000 live blocks, the targets, and their rendering (terminal text and the generated
 * raw block of BENCHMARKS.md). Pure functions of a {@link RawRun}, tested without running anything.
 *
 * A round runs every row once, each in a process of its own, one after another; a ratio is taken
 * between two rows of the same round, so a slow spell of a shared machine falls on both sides of
 * it. A figure is the median over the rounds, a ratio the median of the rounds' ratios.
 */
import { median } from './measure';
import type { RawMeasurement } from './protocol';
import { PAIRS_WARMUP_PASSES } from './raw-measure';
import type { RawWorkload } from './raw-plan';
import { type Grid, renderMarkdown, renderText } from './report';
import type { RunInfo } from './results';
import { spreadOf, type TargetRow } from './targets';

/** Markers of the raw block of BENCHMARKS.md. */
export const RAW_BLOCK = {
  begin: '<!-- bench-raw:begin -->',
  end: '<!-- bench-raw:end -->',
} as const;

const AS_TLSF = 'as-tlsf';
const BUMP = 'bump';
/** The strategies the raw targets hold to account. */
export const RAW_TARGET_ROWS = ['first-fit', 'best-fit', 'good-fit', 'buddy', 'slab'] as const;
const GROWTH_FROM = 'random-5k';
const GROWTH_TO = 'random-100k';

/** One measurement and the round it belongs to (0-based). */
export interface RawRoundMeasurement extends RawMeasurement {
  readonly round: number;
}

/** A run of the raw workloads. */
export interface RawRun extends RunInfo {
  readonly rounds: number;
  readonly seed: number;
  readonly durationSeconds: number;
  readonly workloads: readonly RawWorkload[];
  readonly rows: readonly { readonly name: string; readonly recipe: string }[];
  readonly measurements: readonly RawRoundMeasurement[];
  readonly errors: readonly {
    readonly allocator: string;
    readonly workload: string;
    readonly message: string;
  }[];
}

/** CPU time per call of a measurement, in ns. */
export function nsPerCall(measurement: RawMeasurement): number {
  return measurement.calls > 0 ? measurement.cpuNs / measurement.calls : Number.NaN;
}

/** ns per call of `allocator` on `workload` in each round; null where the round has none. */
export function byRound(run: RawRun, allocator: string, workload: string): (number | null)[] {
  const figures: (number | null)[] = Array.from({ length: run.rounds }, () => null);
  for (const m of run.measurements) {
    if (m.allocator === allocator && m.workload === workload && m.calls > 0) {
      figures[m.round] = nsPerCall(m);
    }
  }
  return figures;
}

/** Median ns per call over the rounds, or null when no round measured it. */
export function rawFigure(run: RawRun, allocator: string, workload: string): number | null {
  const figures = byRound(run, allocator, workload).filter((f): f is number => f !== null);
  return figures.length > 0 ? median(figures) : null;
}

/** `top / bottom` in each round where both were measured. */
export function ratiosByRound(top: (number | null)[], bottom: (number | null)[]): number[] {
  const ratios: number[] = [];
  for (let r = 0; r < top.length; r++) {
    const t = top[r];
    const b = bottom[r];
    if (t != null && b != null && b > 0) ratios.push(t / b);
  }
  return ratios;
}

/** The ratio of `allocator` to `peer` on `workload` in each round. */
export function peerRatios(
  run: RawRun,
  allocator: string,
  peer: string,
  workload: string,
): number[] {
  return ratiosByRound(byRound(run, allocator, workload), byRound(run, peer, workload));
}

/**
 * `combine(ns on random-100k, ns on random-5k)` in each round, per call; null where either is
 * unmeasured.
 */
function acrossOf(
  run: RawRun,
  allocator: string,
  combine: (to: number, from: number) => number,
): (number | null)[] {
  const from = byRound(run, allocator, GROWTH_FROM);
  return byRound(run, allocator, GROWTH_TO).map((to, r) => {
    const f = from[r];
    return to != null && f != null ? combine(to, f) : null;
  });
}

/** ns per call on random-100k over ns per call on random-5k in each round; null where unmeasured. */
function growthOf(run: RawRun, allocator: string): (number | null)[] {
  return acrossOf(run, allocator, (to, from) => to / from);
}

/** ns per call on random-100k over ns per call on random-5k, in each round that measured both. */
export function growthByRound(run: RawRun, allocator: string): number[] {
  return growthOf(run, allocator).filter((g): g is number => g !== null);
}

/** The row's growth divided by the wasm TLSF's, in each round. */
export function growthAgainstPeer(run: RawRun, allocator: string): number[] {
  return ratiosByRound(growthOf(run, allocator), growthOf(run, AS_TLSF));
}

/** ns per call on random-100k less ns per call on random-5k in each round; null where unmeasured. */
function addedOf(run: RawRun, allocator: string): (number | null)[] {
  return acrossOf(run, allocator, (to, from) => to - from);
}

/**
 * The ns per call the row adds from random-5k to random-100k over what the wasm TLSF adds, in each
 * round. Beside the growth quotient: a row twice as fast as the peer on random-5k that pays the
 * same cache misses on random-100k shows a higher quotient but the same added time.
 */
export function addedAgainstPeer(run: RawRun, allocator: string): number[] {
  return ratiosByRound(addedOf(run, allocator), addedOf(run, AS_TLSF));
}

const ratio = (value: number): string => `${value.toFixed(2)}×`;

function ratioTarget(
  run: RawRun,
  allocator: string,
  peer: string,
  workload: string,
  limit: number,
): TargetRow | null {
  const ratios = peerRatios(run, allocator, peer, workload);
  if (ratios.length === 0) return null;
  const value = median(ratios);
  const spread = spreadOf(ratios, limit);
  return {
    target: `${allocator}, ${workload}: × ${peer}`,
    source: 'raw',
    measured: `${ratio(value)} ${peer}${spread ? ` (${spread})` : ''}`,
    limit: `≤ ${limit.toFixed(1)}× ${peer}`,
    status: value <= limit ? 'met' : 'missed',
  };
}

function growthTarget(run: RawRun, allocator: string): TargetRow | null {
  const against = growthAgainstPeer(run, allocator);
  if (against.length === 0) return null;
  const own = median(growthByRound(run, allocator));
  const peer = median(growthByRound(run, AS_TLSF));
  const value = median(against);
  return {
    target: `${allocator}: growth from ${GROWTH_FROM} to ${GROWTH_TO}`,
    source: 'raw',
    measured: `${ratio(own)} (as-tlsf ${ratio(peer)}; ${spreadOf(against, 1)} of as-tlsf's)`,
    limit: "≤ as-tlsf's growth",
    status: value <= 1 ? 'met' : 'missed',
  };
}

/** The raw targets, evaluated on `run`; a target whose rows were not measured says so. */
export function rawTargets(run: RawRun): TargetRow[] {
  const rows: TargetRow[] = [];
  const add = (row: TargetRow | null, target: string, limit: string) =>
    rows.push(row ?? { target, source: 'raw', measured: '—', limit, status: 'not measured' });
  for (const workload of ['pairs-64', GROWTH_FROM]) {
    for (const allocator of RAW_TARGET_ROWS) {
      add(
        ratioTarget(run, allocator, AS_TLSF, workload, 1),
        `${allocator}, ${workload}: × ${AS_TLSF}`,
        `≤ 1.0× ${AS_TLSF}`,
      );
    }
  }
  add(
    ratioTarget(run, 'slab', BUMP, 'pairs-64', 1.5),
    `slab, pairs-64: × ${BUMP}`,
    `≤ 1.5× ${BUMP}`,
  );
  for (const allocator of RAW_TARGET_ROWS) {
    add(
      growthTarget(run, allocator),
      `${allocator}: growth from ${GROWTH_FROM} to ${GROWTH_TO}`,
      "≤ as-tlsf's growth",
    );
  }
  return rows;
}

/** The median of `ratios` with their range over the rounds, or `—` when there are none. */
function ratioCell(ratios: readonly number[]): [string, string] {
  if (ratios.length === 0) return ['—', '—'];
  const low = Math.min(...ratios);
  const high = Math.max(...ratios);
  return [ratio(median(ratios)), `${low.toFixed(2)}–${high.toFixed(2)}`];
}

/** The table of one raw workload: a row per allocator measured on it. */
export function rawGrid(run: RawRun, workload: RawWorkload): Grid {
  const pairs = workload.kind === 'pairs';
  const headers = [
    'allocator',
    'ns/op',
    ...(pairs ? ['ns/pair'] : []),
    '× as-tlsf',
    'rounds',
    '× bump',
    'failed allocs',
  ];
  const rows: string[][] = [];
  for (const row of run.rows) {
    const ns = rawFigure(run, row.name, workload.id);
    if (ns === null) continue;
    const failures = run.measurements
      .filter((m) => m.allocator === row.name && m.workload === workload.id)
      .reduce((most, m) => Math.max(most, m.failures), 0);
    const [tlsf, spread] = ratioCell(peerRatios(run, row.name, AS_TLSF, workload.id));
    rows.push([
      row.name,
      ns.toFixed(1),
      ...(pairs ? [(2 * ns).toFixed(1)] : []),
      tlsf,
      spread,
      ratioCell(peerRatios(run, row.name, BUMP, workload.id))[0],
      String(failures),
    ]);
  }
  return { headers, rows, numeric: headers.map((_, i) => i > 0) };
}

/** The growth table: each row's ns per call on both random workloads, and the growth between. */
export function growthGrid(run: RawRun): Grid {
  const headers = [
    'allocator',
    `${GROWTH_FROM} ns/op`,
    `${GROWTH_TO} ns/op`,
    'growth',
    "÷ as-tlsf's growth",
    'rounds',
    'added ns/op',
    "÷ as-tlsf's added",
  ];
  const rows: string[][] = [];
  for (const row of run.rows) {
    const from = rawFigure(run, row.name, GROWTH_FROM);
    const to = rawFigure(run, row.name, GROWTH_TO);
    if (from === null || to === null) continue;
    const [against, spread] = ratioCell(growthAgainstPeer(run, row.name));
    const added = addedOf(run, row.name).filter((a): a is number => a !== null);
    rows.push([
      row.name,
      from.toFixed(1),
      to.toFixed(1),
      ratioCell(growthByRound(run, row.name))[0],
      against,
      spread,
      added.length === 0 ? '—' : median(added).toFixed(1),
      ratioCell(addedAgainstPeer(run, row.name))[0],
    ]);
  }
  return { headers, rows, numeric: headers.map((_, i) => i > 0) };
}

function describe(workload: RawWorkload): string {
  if (workload.kind === 'pairs') {
    const pairs = workload.pairs.toLocaleString('en-US');
    return `\`free(allocate(${workload.size}))\` ${pairs} times, after ${PAIRS_WARMUP_PASSES} untimed passes of as many`;
  }
  return (
    `${workload.liveBlocks.toLocaleString('en-US')} blocks filled untimed, then ` +
    `${workload.operations.toLocaleString('en-US')} timed operations keeping the live count within ±5 %`
  );
}

const targetsGrid = (run: RawRun): Grid => ({
  headers: ['target', 'measured', 'target', 'status'],
  rows: rawTargets(run).map((t) => [t.target, t.measured, t.limit, t.status]),
  numeric: [false, false, false, false],
});

/** Everything the raw CLI prints after a run. */
export function renderRawTerminal(run: RawRun): string {
  const out: string[] = [];
  for (const e of run.errors) out.push(`error in ${e.allocator} on ${e.workload}: ${e.message}`);
  for (const workload of run.workloads) {
    out.push('', workload.title, `  ${describe(workload)}`, '', renderText(rawGrid(run, workload)));
  }
  out.push('', 'Growth', '', renderText(growthGrid(run)));
  out.push('', 'Targets', '', renderText(targetsGrid(run)));
  return out.join('\n');
}

/** The raw block of BENCHMARKS.md (markers included). */
export function renderRawBlock(run: RawRun): string {
  const out: string[] = [
    RAW_BLOCK.begin,
    '<!-- Generated by apps/bench (`pnpm bench:raw`); edits between these markers are overwritten. -->',
    '',
    '## Raw calls',
    '',
    `- Command: \`${run.command}\` (${run.rounds} rounds; seed ${run.seed})`,
    `- Node ${run.node} on ${run.platform}; CPU: ${run.cpu}, ${run.cores} cores`,
    `- Date: ${run.date}; the run took ${Math.round(run.durationSeconds)} s`,
    '',
    'How to read the tables: each row calls `allocate` and `free` directly in a loop of its own, ' +
      'with its handles in one dense array, in a process of its own; a round runs every row once, ' +
      'one after another. **ns/op** is the median over the rounds of the process’s CPU time ' +
      '(user + system) per call over the timed loop; **× as-tlsf** and **× bump** are the medians ' +
      'of the ratios taken within each round, **rounds** the range of the ratio to as-tlsf over ' +
      'the rounds. **Growth** is ns/op on random-100k over ns/op on random-5k, per round; ' +
      '**added** is ns/op on random-100k less ns/op on random-5k, per round.',
    '',
    '### Targets',
    '',
    renderMarkdown({ ...targetsGrid(run), headers: ['target', 'measured', 'target', 'status'] }),
  ];
  if (run.errors.length > 0) {
    out.push('');
    for (const e of run.errors)
      out.push(`- Error in ${e.allocator} on ${e.workload}: ${e.message}`);
  }
  for (const workload of run.workloads) {
    out.push('', `### ${workload.title}`, '', describe(workload), '');
    out.push(renderMarkdown(rawGrid(run, workload)));
  }
  out.push('', '### Growth from 5,000 to 100,000 live blocks', '', renderMarkdown(growthGrid(run)));
  out.push('', RAW_BLOCK.end);
  return out.join('\n');
}
