import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { findTracesDir, readTraces } from '@allot/workloads/node';
import { describe, expect, it } from 'vitest';
import { findRow } from '../analysis/registry';
import { type Fidelity, fidelityOf, runWorkloads } from '../run';
import { fidelityLines } from './tables';

const MiB = 2 ** 20;

function fidelity(overrides: Partial<Fidelity>): Fidelity {
  return {
    allocator: 'caching',
    config: '',
    assumedSettings: false,
    recordedPeakSource: 'window',
    recordedPeakReservedBytes: 64 * MiB,
    predictedPeakReservedBytes: 64 * MiB,
    error: 0,
    segments: {
      recorded: 2,
      recordedBytes: 64 * MiB,
      predicted: 2,
      predictedBytes: 64 * MiB,
      matched: 2,
      matchFraction: 1,
    },
    ...overrides,
  };
}

describe('the fidelity lines', () => {
  it('name what the recorded peak is: the window of a snapshot, the largest Total Reserved of a profile', () => {
    expect(fidelityLines(fidelity({}))[1]).toMatch(
      /\(the peak within the recorded window\): error \+0\.0 %/,
    );
    expect(fidelityLines(fidelity({ recordedPeakSource: 'total-reserved' }))[1]).toMatch(
      /\(the largest Total Reserved\)/,
    );
    expect(fidelityLines(fidelity({ assumedSettings: true }))[0]).toMatch(
      /replays PyTorch's defaults \(the recording does not state its settings\)/,
    );
  });

  it('claim no match and no error where nothing was recorded', () => {
    const lines = fidelityLines(
      fidelity({
        recordedPeakReservedBytes: 0,
        predictedPeakReservedBytes: 2 * MiB,
        error: null,
        segments: {
          recorded: 0,
          recordedBytes: 0,
          predicted: 1,
          predictedBytes: 2 * MiB,
          matched: 0,
          matchFraction: 1,
        },
      }),
    );
    expect(lines.join('\n')).not.toMatch(/error [+−]|100\.0 %|every segment decision/);
    expect(lines[1]).toMatch(/no reserved bytes were recorded/);
    expect(lines[2]).toMatch(/PyTorch none recorded, ours 1 \(2\.00 MiB\): nothing to match/);
  });

  it('says when every recorded decision matches but ours add more', () => {
    const lines = fidelityLines(
      fidelity({
        segments: {
          recorded: 1,
          recordedBytes: 2 * MiB,
          predicted: 3,
          predictedBytes: 6 * MiB,
          matched: 1,
          matchFraction: 1,
        },
      }),
    );
    expect(lines[3]).toMatch(/PyTorch's decisions all match, in order; ours add 2 more/);
  });

  it('has no error figure for a recording of 0 bytes reserved', () => {
    const row = { allocator: 'caching', peakReservedBytes: 2 * MiB } as Parameters<
      typeof fidelityOf
    >[0];
    expect(fidelityOf(row, 0, undefined).error).toBeNull();
    expect(fidelityOf(row, 2 * MiB, undefined).error).toBe(0);
  });
});

describe('the fidelity lines under --capacity', () => {
  const folder = findTracesDir();
  const file = folder === null ? null : join(folder, 'pytorch-h100', 'train-default.pickle.gz');
  it.skipIf(file === null || !existsSync(file))(
    'compare the recorded settings on the recording’s own device, and say the capacity was set aside',
    async () => {
      const [trace] = await readTraces(file!);
      const [workload] = runWorkloads(
        [{ id: 'train', title: 'train', description: 'd', trace: trace!, recordedRow: 'caching' }],
        [findRow('caching')!],
        11 * 2 ** 30,
        undefined,
        undefined,
        { skipTiming: true },
      );
      // The caching row itself ran under 11 GiB and gave segments back to stay under it.
      expect(workload!.rows[0]!.peakReservedBytes).toBeLessThan(11 * 2 ** 30);
      const f = workload!.torch!.fidelity!;
      expect(Math.abs(f.error!)).toBeLessThan(0.01);
      expect(f.segments!.matchFraction).toBe(1);
      const lines = fidelityLines(f).join('\n');
      expect(lines).toMatch(/without --capacity 11\.0 GiB/);
      expect(lines).toMatch(/every segment decision is the same/);
    },
  );
});
