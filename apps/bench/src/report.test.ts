import { summarizeTrace, TraceBuilder } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import type { CellResult } from './measure';
import {
  BLOCK_BEGIN,
  BLOCK_END,
  formatNs,
  formatRatio,
  mergeBenchmarksFile,
  renderMarkdownBlock,
  renderText,
  workloadGrid,
} from './report';
import type { BenchRun } from './results';
import { QUICK_SETTINGS } from './settings';
import { evaluateTargets, roundRatios, spreadOf } from './targets';

function cell(
  allocator: string,
  workload: string,
  nsPerOp: number,
  ratio: number | null,
): CellResult {
  return {
    allocator,
    workload,
    nsPerOp,
    runs: [nsPerOp],
    partial: false,
    timedEvents: 1000,
    timingCapacity: 2 ** 20,
    failures: 0,
    highWater: 100,
    minCapacity: ratio === null ? null : ratio * 64,
    capacityStatus: ratio === null ? 'skipped' : 'exact',
    capacityRatio: ratio,
    capacityProbes: 3,
    elapsedMs: 10,
  };
}

function fixtureRun(): BenchRun {
  const builder = new TraceBuilder();
  builder.free(builder.alloc(64));
  const summary = summarizeTrace(builder.build('t'));
  const workload = (id: string, kind: 'pairs' | 'mix' | 'trace') => ({
    id,
    title: id,
    kind,
    summary,
    timedFrom: 0,
  });
  const allocator = (name: string, peer = false) => ({
    name,
    recipe: `${name}()`,
    peer,
    status: 'measured' as const,
  });
  return {
    command: 'pnpm bench --quick',
    date: '2025-01-01',
    node: 'v20.0.0',
    cpu: 'Test CPU',
    cores: 2,
    platform: 'linux',
    settings: QUICK_SETTINGS,
    durationSeconds: 12,
    workloads: [
      workload('pairs-64', 'pairs'),
      workload('mix-5k', 'mix'),
      workload('trace:ls', 'trace'),
    ],
    allocators: [
      allocator('best-fit'),
      { name: 'slab', recipe: 'slab()', peer: false, status: 'unavailable', reason: 'not built' },
      allocator('thi.ng-malloc', true),
      allocator('bump', true),
    ],
    cells: [
      cell('best-fit', 'pairs-64', 10, 1),
      cell('bump', 'pairs-64', 5, 2),
      cell('thi.ng-malloc', 'pairs-64', 20, 1.5),
      cell('best-fit', 'mix-5k', 50, 1.01),
      cell('thi.ng-malloc', 'mix-5k', 50_000, null),
      cell('best-fit', 'trace:ls', 100, 1.2),
    ],
    skipped: [],
    errors: [],
    notes: ['a note'],
  };
}

describe('formatting', () => {
  it('formats nanoseconds and ratios', () => {
    expect(formatNs(12.345)).toBe('12.3');
    expect(formatNs(12_345.6)).toBe('12,346');
    expect(formatRatio(1.234)).toBe('1.23×');
    expect(formatRatio(12.34)).toBe('12.3×');
    expect(formatRatio(1234)).toBe('1,234×');
  });

  it('builds a workload table with ratios against the peers', () => {
    const run = fixtureRun();
    const grid = workloadGrid(run, run.workloads[0]!);
    expect(grid.headers).toContain('ns/pair');
    expect(grid.rows[0]).toEqual(['best-fit', '10.0', '20.0', '2.00×', '—', '2.00×', '1.000', '0']);
    const text = renderText(grid);
    expect(text.split('\n')[0]).toMatch(/^allocator\s+ns\/op\s+ns\/pair/);
  });

  it('evaluates targets as met, missed, or not measured', () => {
    const rows = evaluateTargets(fixtureRun());
    const find = (target: string) => rows.find((r) => r.target === target)!;
    expect(find('best-fit, mix-5k: ns/op')).toMatchObject({
      status: 'met',
      measured: '50.0 ns/op',
    });
    expect(find('best-fit, pairs-64: ns per alloc+free pair')).toMatchObject({ status: 'met' });
    expect(find('best-fit, mix-5k: speed-up over thi.ng-malloc')).toMatchObject({ status: 'met' });
    expect(find('best-fit, every real-program trace: capacity / peak live')).toMatchObject({
      status: 'missed',
      measured: '1.200× (worst: ls)',
    });
    expect(find('first-fit, mix-5k: ns/op').status).toBe('not measured');
  });

  it('pairs the rounds of two rows and shows how far their ratios range', () => {
    expect(roundRatios([10, 12, 9], [10, 10, 10])).toEqual([1, 1.2, 0.9]);
    // One round, a missing round, or no rounds: no spread to show.
    expect(roundRatios([10], [10])).toEqual([]);
    expect(roundRatios([10, 12], [10, 10, 10])).toEqual([]);
    expect(roundRatios(null, [10, 10])).toEqual([]);
    expect(spreadOf([1, 1.2, 0.9], 1)).toBe('rounds 0.90–1.20×, 2 of 3 within');
    expect(spreadOf([], 1)).toBe('');

    const run = fixtureRun();
    const rounds = (c: CellResult, medians: number[]): CellResult => ({
      ...c,
      processMedians: medians,
    });
    const threeRounds: BenchRun = {
      ...run,
      settings: { ...run.settings, processes: 3 },
      workloads: [...run.workloads, { ...run.workloads[1]!, id: 'mix-100k' }],
      cells: [
        rounds(cell('good-fit', 'pairs-64', 30, 1), [30, 28, 40]),
        rounds(cell('as-tlsf', 'pairs-64', 36, 1), [36, 35, 36]),
        rounds(cell('good-fit', 'mix-5k', 100, 1), [100, 110, 90]),
        rounds(cell('good-fit', 'mix-100k', 200, 1), [140, 220, 200]),
      ],
    };
    const rows = evaluateTargets(threeRounds);
    const find = (target: string) => rows.find((r) => r.target === target)!;
    expect(find('good-fit, pairs-64: ns/op against AssemblyScript TLSF')).toMatchObject({
      status: 'met',
      measured: '0.83× as-tlsf (rounds 0.80–1.11×, 2 of 3 within)',
    });
    const growth = rows.find(
      (r) => r.target === 'good-fit: ns/op on mix-100k vs mix-5k' && r.source === 'issue 15',
    );
    expect(growth).toMatchObject({
      status: 'missed',
      measured: '2.00× (rounds 1.40–2.22×, 1 of 3 within)',
    });
  });
});

describe('BENCHMARKS.md', () => {
  const block = renderMarkdownBlock(fixtureRun());

  it('states the command, machine and date, and skipped rows', () => {
    expect(block.startsWith(BLOCK_BEGIN)).toBe(true);
    expect(block.endsWith(BLOCK_END)).toBe(true);
    expect(block).toContain('`pnpm bench --quick`');
    expect(block).toContain('Node v20.0.0');
    expect(block).toContain('Test CPU, 2 cores');
    expect(block).toContain('2025-01-01');
    expect(block).toContain('skipped: not built');
    expect(block).toContain('### Targets');
  });

  it('keeps hand-written sections and replaces only the generated block', () => {
    const existing = `# Benchmarks\n\n## CUDA\n\nhand-written\n\n${BLOCK_BEGIN}\nold\n${BLOCK_END}\n\n## Stats\n\nmore\n`;
    const merged = mergeBenchmarksFile(existing, block);
    expect(merged).toContain('## CUDA\n\nhand-written');
    expect(merged).toContain('## Stats\n\nmore');
    expect(merged).not.toContain('\nold\n');
    expect(merged.split(BLOCK_BEGIN).length).toBe(2);
    expect(mergeBenchmarksFile(merged, block)).toBe(merged);
  });

  it('appends the block to a file without one, and starts a new file', () => {
    expect(mergeBenchmarksFile('# Benchmarks\n\n## Caching\n', block)).toMatch(
      /## Caching\n\n<!-- bench:begin -->/,
    );
    expect(mergeBenchmarksFile(null, block)).toMatch(/^# Benchmarks\n/);
  });
});
