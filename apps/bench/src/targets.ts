/**
 * The targets the issues set, checked against a run. Each target measures itself from the results
 * and says met, missed, or not measured (row or workload absent in this run). Later strategies add
 * entries to {@link TARGETS}; nothing here asserts in tests.
 */
import { type BenchRun, cellOf } from './results';

export type TargetStatus = 'met' | 'missed' | 'not measured';

/** One evaluated target. */
export interface TargetRow {
  readonly target: string;
  readonly source: string;
  readonly measured: string;
  readonly limit: string;
  readonly status: TargetStatus;
}

/** A target: a description, and how to measure it from a run. */
export interface Target {
  readonly target: string;
  /** Where it comes from, for example `issue 3`. */
  readonly source: string;
  readonly limit: string;
  /** Measured value as text and whether it is met, or null when not measured. */
  readonly evaluate: (run: BenchRun) => { measured: string; met: boolean } | null;
}

const fmt = (value: number, digits = 1): string => value.toFixed(digits);

function nsPerOp(run: BenchRun, allocator: string, workload: string): number | null {
  const cell = cellOf(run, allocator, workload);
  return cell && cell.nsPerOp !== null && !cell.partial ? cell.nsPerOp : null;
}

function nsAtMost(allocator: string, workload: string, limit: number, source: string): Target {
  return {
    target: `${allocator}, ${workload}: ns/op`,
    source,
    limit: `≤ ${limit} ns/op`,
    evaluate: (run) => {
      const ns = nsPerOp(run, allocator, workload);
      return ns === null ? null : { measured: `${fmt(ns)} ns/op`, met: ns <= limit };
    },
  };
}

function pairAtMost(allocator: string, workload: string, limit: number, source: string): Target {
  return {
    target: `${allocator}, ${workload}: ns per alloc+free pair`,
    source,
    limit: `≤ ${limit} ns/pair`,
    evaluate: (run) => {
      const ns = nsPerOp(run, allocator, workload);
      return ns === null ? null : { measured: `${fmt(2 * ns)} ns/pair`, met: 2 * ns <= limit };
    },
  };
}

function fasterThan(
  allocator: string,
  peer: string,
  workload: string,
  factor: number,
  source: string,
): Target {
  return {
    target: `${allocator}, ${workload}: speed-up over ${peer}`,
    source,
    limit: `≥ ${factor}×`,
    evaluate: (run) => {
      const ns = nsPerOp(run, allocator, workload);
      const cell = cellOf(run, peer, workload);
      if (ns === null || !cell || cell.nsPerOp === null) return null;
      const speedup = cell.nsPerOp / ns;
      const note = cell.partial ? ` (${peer} timed on a prefix)` : '';
      return { measured: `${fmt(speedup, 0)}×${note}`, met: speedup >= factor };
    },
  };
}

/**
 * Per-round figures of a cell: its processes' medians in round order, when every round measured it
 * (the bench runs one process per row per round, so round p of two rows ran at most one round
 * apart, and a slow spell of the machine falls on both). Null when a round is missing.
 */
function byRound(run: BenchRun, allocator: string, workload: string): readonly number[] | null {
  const cell = cellOf(run, allocator, workload);
  const medians = cell?.processMedians;
  if (!cell || cell.partial || !medians || medians.length !== run.settings.processes) return null;
  return medians;
}

/**
 * The ratio `top / bottom` in each round, for the spread behind a median ratio: how far the rounds
 * range, and in how many the limit holds. Empty with fewer than two rounds.
 */
export function roundRatios(
  top: readonly number[] | null,
  bottom: readonly number[] | null,
): number[] {
  if (!top || !bottom || top.length < 2 || top.length !== bottom.length) return [];
  return top.map((t, i) => t / bottom[i]!);
}

/** `rounds 0.82–0.93×, 3 of 3 within` for per-round ratios, or '' when there are none. */
export function spreadOf(ratios: readonly number[], limit: number): string {
  if (ratios.length === 0) return '';
  const within = ratios.filter((r) => r <= limit).length;
  const low = Math.min(...ratios);
  const high = Math.max(...ratios);
  return `rounds ${fmt(low, 2)}–${fmt(high, 2)}×, ${within} of ${ratios.length} within`;
}

function relativeTo(
  allocator: string,
  other: string,
  workload: string,
  factor: number,
  source: string,
  label: string,
): Target {
  return {
    target: `${allocator}, ${workload}: ${label}`,
    source,
    limit: `≤ ${factor}× ${other}`,
    evaluate: (run) => {
      const ns = nsPerOp(run, allocator, workload);
      const base = nsPerOp(run, other, workload);
      if (ns === null || base === null) return null;
      const ratios = roundRatios(byRound(run, allocator, workload), byRound(run, other, workload));
      const spread = spreadOf(ratios, factor);
      return {
        measured: `${fmt(ns / base, 2)}× ${other}${spread ? ` (${spread})` : ''}`,
        met: ns / base <= factor,
      };
    },
  };
}

/** Rows whose own growth is shown beside a growth target's figure. */
const GROWTH_PEERS = ['as-tlsf', 'bump', 'bump+table'];

function growth(
  allocator: string,
  small: string,
  large: string,
  factor: number,
  source: string,
): Target {
  return {
    target: `${allocator}: ns/op on ${large} vs ${small}`,
    source,
    limit: `≤ ${factor}×`,
    evaluate: (run) => {
      const a = nsPerOp(run, allocator, small);
      const b = nsPerOp(run, allocator, large);
      if (a === null || b === null) return null;
      // The peers' growth in the same run says how much of it is the machine's memory hierarchy.
      const peers = GROWTH_PEERS.flatMap((peer) => {
        const p = nsPerOp(run, peer, small);
        const q = nsPerOp(run, peer, large);
        return p === null || q === null ? [] : [`${peer} ${fmt(q / p, 2)}×`];
      });
      // One process measures both workloads within a minute: its own growth is a fair pair.
      const spread = spreadOf(
        roundRatios(byRound(run, allocator, large), byRound(run, allocator, small)),
        factor,
      );
      const parts = [spread, peers.join(', ')].filter((part) => part !== '');
      const context = parts.length === 0 ? '' : ` (${parts.join('; ')})`;
      return { measured: `${fmt(b / a, 2)}×${context}`, met: b / a <= factor };
    },
  };
}

/** Memory on one workload, or the worst over every workload whose id starts with `prefix`. */
function memoryAtMost(allocator: string, workloads: string, limit: number, source: string): Target {
  const every = workloads.endsWith('*');
  const prefix = workloads.slice(0, -1);
  return {
    target: `${allocator}, ${every ? 'every real-program trace' : workloads}: capacity / peak live`,
    source,
    limit: `≤ ${limit}×`,
    evaluate: (run) => {
      const ids = run.workloads
        .map((w) => w.id)
        .filter((id) => (every ? id.startsWith(prefix) : id === workloads));
      let worst: { ratio: number; id: string; approximate: boolean } | null = null;
      for (const id of ids) {
        const cell = cellOf(run, allocator, id);
        if (!cell) continue;
        if (cell.capacityRatio === null) return null;
        if (!worst || cell.capacityRatio > worst.ratio) {
          worst = { ratio: cell.capacityRatio, id, approximate: cell.capacityStatus !== 'exact' };
        }
      }
      if (!worst) return null;
      const where = every ? ` (worst: ${worst.id.replace('trace:', '')})` : '';
      const bound = worst.approximate ? '≤ ' : '';
      return { measured: `${bound}${fmt(worst.ratio, 3)}×${where}`, met: worst.ratio <= limit };
    },
  };
}

/**
 * Capacity / peak live of each strategy on the training loop and the real-program traces in the
 * full run of 2026-11-21 (before the lean engine of issue 15): the "no worse than today" line.
 */
const FRAGMENTATION_BASELINE: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  'first-fit': {
    training: 1.039,
    'trace:cpp-demangle': 1.002,
    'trace:dogfood': 1.025,
    'trace:ffmpeg': 1.015,
    'trace:find': 1.21,
    'trace:gcc-hello': 1.002,
    'trace:grep-random-data': 1.136,
    'trace:grep-recursive': 1.114,
    'trace:ls': 1.002,
    'trace:source-map': 1.001,
  },
  'best-fit': {
    training: 1.015,
    'trace:cpp-demangle': 1.002,
    'trace:dogfood': 1.023,
    'trace:ffmpeg': 1.016,
    'trace:find': 1.005,
    'trace:gcc-hello': 1.002,
    'trace:grep-random-data': 1.136,
    'trace:grep-recursive': 1.004,
    'trace:ls': 1.002,
    'trace:source-map': 1.001,
  },
  'good-fit': {
    training: 1.051,
    'trace:cpp-demangle': 1.002,
    'trace:dogfood': 1.023,
    'trace:ffmpeg': 1.016,
    'trace:find': 1.005,
    'trace:gcc-hello': 1.002,
    'trace:grep-random-data': 1.136,
    'trace:grep-recursive': 1.004,
    'trace:ls': 1.002,
    'trace:source-map': 1.001,
  },
  buddy: {
    training: 1.044,
    'trace:cpp-demangle': 1.176,
    'trace:dogfood': 1.444,
    'trace:ffmpeg': 1.554,
    'trace:find': 1.845,
    'trace:gcc-hello': 1.47,
    'trace:grep-random-data': 1.802,
    'trace:grep-recursive': 1.781,
    'trace:ls': 1.844,
    'trace:source-map': 1.469,
  },
  slab: {
    'trace:cpp-demangle': 68.823,
    'trace:find': 22.677,
    'trace:grep-random-data': 26.742,
    'trace:grep-recursive': 16.749,
    'trace:ls': 25.764,
  },
};

/** Bisection precision of a full run's capacity search, allowed as noise on top of the baseline. */
const CAPACITY_SLACK = 1.002;

/** Memory on the training loop and every real-program trace, each against its recorded baseline. */
function memoryNoWorse(allocator: string, source: string): Target {
  const baseline = FRAGMENTATION_BASELINE[allocator] ?? {};
  return {
    target: `${allocator}, training and every real-program trace: capacity / peak live`,
    source,
    limit: 'no worse than before (2026-11-21)',
    evaluate: (run) => {
      // The baseline comes from a full run; quick mode replays shorter workloads.
      if (run.settings.quick) return null;
      let worst: { excess: number; id: string; ratio: number; before: number } | null = null;
      for (const id of Object.keys(baseline)) {
        const cell = cellOf(run, allocator, id);
        if (!cell) continue;
        if (cell.capacityRatio === null) return null;
        const before = baseline[id]!;
        const excess = cell.capacityRatio / before;
        if (!worst || excess > worst.excess) {
          worst = { excess, id, ratio: cell.capacityRatio, before };
        }
      }
      if (!worst) return null;
      const where = worst.id.replace('trace:', '');
      return {
        measured: `worst ${where}: ${fmt(worst.ratio, 3)}× (before ${fmt(worst.before, 3)}×)`,
        met: worst.excess <= CAPACITY_SLACK,
      };
    },
  };
}

const I3 = 'issue 3';
const I4 = 'issue 4';
const I15 = 'issue 15';
/** The wasm peer every speed target of issue 15 is a ratio against. */
const AS_TLSF = 'as-tlsf';
const FITS = ['first-fit', 'best-fit', 'good-fit'];

/** Every target of the issues so far, in BENCHMARKS.md order. */
export const TARGETS: readonly Target[] = [
  nsAtMost('best-fit', 'mix-5k', 80, I3),
  nsAtMost('first-fit', 'mix-5k', 80, I3),
  nsAtMost('good-fit', 'mix-5k', 60, I3),
  fasterThan('best-fit', 'thi.ng-malloc', 'mix-5k', 100, I3),
  fasterThan('first-fit', 'thi.ng-malloc', 'mix-5k', 100, I3),
  fasterThan('good-fit', 'thi.ng-malloc', 'mix-5k', 100, I3),
  growth('best-fit', 'mix-5k', 'mix-100k', 2, I3),
  growth('first-fit', 'mix-5k', 'mix-100k', 2, I3),
  growth('good-fit', 'mix-5k', 'mix-100k', 2, I3),
  ...['first-fit', 'best-fit', 'good-fit'].flatMap((a) => [
    pairAtMost(a, 'pairs-64', 30, I3),
    pairAtMost(a, 'pairs-4k', 30, I3),
  ]),
  memoryAtMost('best-fit', 'trace:*', 1.05, I3),
  memoryAtMost('first-fit', 'trace:*', 1.05, I3),
  memoryAtMost('best-fit', 'training', 1.02, I3),
  pairAtMost('slab', 'pairs-64', 12, I4),
  relativeTo('slab', 'bump', 'pairs-64', 3, I4, 'ns/op against the floor'),
  nsAtMost('buddy', 'mix-5k', 60, I4),
  relativeTo(
    'slab+best-fit',
    'slab',
    'pairs-64',
    1.25,
    I4,
    '"as fast as slab" (read as within 1.25×)',
  ),
  memoryAtMost('slab+best-fit', 'trace:*', 1.15, I4),
  memoryAtMost('slab+best-fit', 'training', 1.15, I4),
  ...FITS.flatMap((a) =>
    ['pairs-64', 'pairs-4k'].map((w) =>
      relativeTo(a, AS_TLSF, w, 1, I15, 'ns/op against AssemblyScript TLSF'),
    ),
  ),
  relativeTo('good-fit', AS_TLSF, 'mix-5k', 1, I15, 'ns/op against AssemblyScript TLSF'),
  relativeTo('first-fit', AS_TLSF, 'mix-5k', 1.5, I15, 'ns/op against AssemblyScript TLSF'),
  relativeTo('best-fit', AS_TLSF, 'mix-5k', 1.5, I15, 'ns/op against AssemblyScript TLSF'),
  ...['pairs-64', 'pairs-4k', 'mix-5k', 'mix-100k'].map((w) =>
    relativeTo('buddy', AS_TLSF, w, 1, I15, 'ns/op against AssemblyScript TLSF'),
  ),
  relativeTo('slab', 'bump', 'pairs-64', 1.5, I15, 'ns/op against the floor'),
  ...[...FITS, 'buddy', 'slab'].map((a) => growth(a, 'mix-5k', 'mix-100k', 1.5, I15)),
  ...[...FITS, 'buddy', 'slab'].map((a) => memoryNoWorse(a, I15)),
  // Same-size pairs through a caching pool are cache hits after the first.
  pairAtMost('caching', 'pairs-64', 60, I15),
];

/** Evaluates every target against `run`. */
export function evaluateTargets(run: BenchRun, targets: readonly Target[] = TARGETS): TargetRow[] {
  return targets.map((target) => {
    const outcome = target.evaluate(run);
    return {
      target: target.target,
      source: target.source,
      limit: target.limit,
      measured: outcome ? outcome.measured : '—',
      status: outcome ? (outcome.met ? 'met' : 'missed') : 'not measured',
    };
  });
}
