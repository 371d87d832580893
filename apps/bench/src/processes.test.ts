import { describe, expect, it } from 'vitest';
import type { CellResult } from './measure';
import { median } from './measure';
import { mergeProcesses } from './processes';

function cell(
  workload: string,
  nsPerOp: number | null,
  extra: Partial<CellResult> = {},
): CellResult {
  return {
    allocator: 'first-fit',
    workload,
    nsPerOp,
    runs: nsPerOp === null ? [] : [nsPerOp],
    partial: false,
    timedEvents: 1000,
    timingCapacity: 2 ** 20,
    failures: 0,
    highWater: 4096,
    minCapacity: null,
    capacityStatus: 'skipped',
    capacityRatio: null,
    capacityProbes: 0,
    elapsedMs: 10,
    ...extra,
  };
}

describe('median', () => {
  it('takes the middle value, or the mean of the middle two', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });
});

describe('mergeProcesses', () => {
  it('keeps the first process memory figures and the median of the processes ns/op', () => {
    const first = [
      cell('pairs-64', 40, { minCapacity: 4096, capacityStatus: 'exact', capacityRatio: 64 }),
      cell('mix-5k', 300),
    ];
    const merged = mergeProcesses([
      first,
      [cell('pairs-64', 80), cell('mix-5k', null)],
      [cell('pairs-64', 45, { partial: true, timedEvents: 10 }), cell('mix-5k', 200)],
    ]);
    expect(merged).toHaveLength(2);
    expect(merged[0]).toMatchObject({
      workload: 'pairs-64',
      nsPerOp: 45,
      processMedians: [40, 80, 45],
      runs: [40, 80, 45],
      minCapacity: 4096,
      capacityStatus: 'exact',
      partial: true,
      timedEvents: 10,
      elapsedMs: 30,
    });
    // A process that did not measure the cell does not count; none measured it: no figure.
    expect(merged[1]).toMatchObject({ nsPerOp: 250, processMedians: [300, 200] });
    const none = mergeProcesses([[cell('mix-5k', null)], [cell('mix-5k', null)]]);
    expect(none[0]).toMatchObject({ nsPerOp: null, processMedians: [] });
  });

  it('passes one process through, and nothing through nothing', () => {
    const only = [cell('pairs-64', 40)];
    expect(mergeProcesses([only])).toEqual(only);
    expect(mergeProcesses([])).toEqual([]);
  });
});
