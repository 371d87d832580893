import { describe, expect, it } from 'vitest';
import { rawWorkloads } from './raw-plan';
import {
  addedAgainstPeer,
  byRound,
  growthAgainstPeer,
  growthByRound,
  growthGrid,
  peerRatios,
  RAW_BLOCK,
  RAW_TARGET_ROWS,
  type RawRun,
  rawFigure,
  rawTargets,
  renderRawBlock,
  renderRawTerminal,
} from './raw-report';
import { BLOCK_BEGIN, BLOCK_END, mergeBenchmarksFile } from './report';

/** ns per call by row and workload, one figure per round. */
type Figures = Record<string, Record<string, number[]>>;

function run(figures: Figures, rounds = 3): RawRun {
  const measurements = Object.entries(figures).flatMap(([allocator, byWorkload]) =>
    Object.entries(byWorkload).flatMap(([workload, perRound]) =>
      perRound.map((ns, round) => ({
        allocator,
        workload,
        round,
        cpuNs: ns * 1000,
        wallNs: ns * 1100,
        calls: 1000,
        failures: 0,
        capacity: 2 ** 26,
      })),
    ),
  );
  return {
    command: 'pnpm bench:raw',
    date: '2026-11-27',
    node: 'v20.20.2',
    cpu: 'test',
    cores: 2,
    platform: 'linux',
    rounds,
    seed: 1,
    durationSeconds: 1,
    workloads: rawWorkloads(),
    rows: Object.keys(figures).map((name) => ({ name, recipe: name })),
    measurements,
    errors: [],
  };
}

const peers: Figures = {
  'as-tlsf': {
    'pairs-64': [20, 30, 20],
    'random-5k': [100, 100, 200],
    'random-100k': [300, 300, 600],
  },
  bump: { 'pairs-64': [10, 10, 10], 'random-5k': [50, 50, 50], 'random-100k': [60, 60, 60] },
};

describe('raw figures', () => {
  it('take the median over rounds and ratios within each round', () => {
    const r = run({
      ...peers,
      'good-fit': { 'pairs-64': [18, 33, 10], 'random-5k': [90, 80, 400] },
    });
    expect(byRound(r, 'good-fit', 'pairs-64')).toEqual([18, 33, 10]);
    expect(rawFigure(r, 'good-fit', 'pairs-64')).toBe(18);
    expect(peerRatios(r, 'good-fit', 'as-tlsf', 'pairs-64')).toEqual([0.9, 1.1, 0.5]);
    expect(rawFigure(r, 'good-fit', 'random-100k')).toBeNull();
    expect(growthByRound(r, 'as-tlsf')).toEqual([3, 3, 3]);
  });

  it('leave a round out of a ratio when either side is missing from it', () => {
    const r = run({ ...peers, buddy: { 'pairs-64': [15, 15, 15] } });
    const partial = {
      ...r,
      measurements: r.measurements.filter((m) => !(m.allocator === 'as-tlsf' && m.round === 1)),
    };
    expect(byRound(partial, 'as-tlsf', 'pairs-64')).toEqual([20, null, 20]);
    expect(peerRatios(partial, 'buddy', 'as-tlsf', 'pairs-64')).toEqual([0.75, 0.75]);
  });

  it('compare each row’s growth with the wasm TLSF’s in the same round', () => {
    const r = run({
      ...peers,
      buddy: { 'random-5k': [50, 50, 50], 'random-100k': [100, 200, 100] },
    });
    expect(growthByRound(r, 'buddy')).toEqual([2, 4, 2]);
    expect(growthAgainstPeer(r, 'buddy')).toEqual([2 / 3, 4 / 3, 2 / 3]);
  });

  it('compare the time each row adds with the time the wasm TLSF adds, round by round', () => {
    const r = run({
      ...peers,
      buddy: { 'random-5k': [50, 50, 50], 'random-100k': [100, 200, 100] },
    });
    // buddy adds 50, 150 and 50 ns; as-tlsf adds 200, 200 and 400 (its quotient is 3 each round).
    expect(addedAgainstPeer(r, 'buddy')).toEqual([0.25, 0.75, 0.125]);
    const grid = growthGrid(r);
    const buddy = grid.rows.find((row) => row[0] === 'buddy')!;
    expect(grid.headers.slice(-2)).toEqual(['added ns/op', "÷ as-tlsf's added"]);
    expect(buddy.at(-2)).toBe('50.0');
  });
});

describe('raw targets', () => {
  it('are met, missed or not measured from the median of the rounds', () => {
    const r = run({
      ...peers,
      'first-fit': { 'pairs-64': [19, 29, 21], 'random-5k': [150, 150, 150] },
      slab: { 'pairs-64': [14, 16, 14] },
    });
    const targets = rawTargets(r);
    const status = (target: string) => targets.find((t) => t.target === target)?.status;
    expect(status('first-fit, pairs-64: × as-tlsf')).toBe('met');
    expect(status('first-fit, random-5k: × as-tlsf')).toBe('missed');
    expect(status('slab, pairs-64: × bump')).toBe('met');
    expect(status('slab, random-5k: × as-tlsf')).toBe('not measured');
    expect(status('best-fit, pairs-64: × as-tlsf')).toBe('not measured');
    expect(targets).toHaveLength(3 * RAW_TARGET_ROWS.length + 1);
    const slabPairs = targets.find((t) => t.target === 'slab, pairs-64: × bump');
    expect(slabPairs?.measured).toBe('1.40× bump (rounds 1.40–1.60×, 2 of 3 within)');
  });
});

describe('the raw block', () => {
  it('renders every workload, the growth and the targets between its markers', () => {
    const r = run({
      ...peers,
      buddy: {
        'pairs-64': [15, 15, 15],
        'random-5k': [50, 50, 50],
        'random-100k': [100, 100, 100],
      },
    });
    const block = renderRawBlock(r);
    expect(block.startsWith(RAW_BLOCK.begin)).toBe(true);
    expect(block.endsWith(RAW_BLOCK.end)).toBe(true);
    expect(block).toContain('| buddy | 15.0 | 30.0 | 0.75× | 0.50–0.75 | 1.50× | 0 |');
    expect(block).toContain('| buddy | 50.0 | 100.0 | 2.00× | 0.67× | 0.67–0.67 |');
    expect(renderRawTerminal(r)).toContain('buddy: growth from random-5k to random-100k');
  });

  it('replaces only its own block of BENCHMARKS.md', () => {
    const existing = `# Benchmarks\n\n${BLOCK_BEGIN}\nreplay\n${BLOCK_END}\n\n${RAW_BLOCK.begin}\nold\n${RAW_BLOCK.end}\n\n## Notes\n`;
    const merged = mergeBenchmarksFile(
      existing,
      `${RAW_BLOCK.begin}\nnew\n${RAW_BLOCK.end}`,
      RAW_BLOCK,
    );
    expect(merged).toBe(existing.replace('old', 'new'));
    const appended = mergeBenchmarksFile(
      '# Benchmarks\n',
      `${RAW_BLOCK.begin}\nx\n${RAW_BLOCK.end}`,
      RAW_BLOCK,
    );
    expect(appended).toBe(`# Benchmarks\n\n${RAW_BLOCK.begin}\nx\n${RAW_BLOCK.end}\n`);
  });
});
