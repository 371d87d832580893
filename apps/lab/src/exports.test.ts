import { toTorchSnapshotPickle } from '@allot/stats';
import { parseTorchSnapshot, unpickle } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { snapshotWithFrames } from '../test/snapshot-with-frames';
import { findRow } from './analysis/registry';
import { peakState, torchSnapshotOf } from './exports';
import { runWorkloads } from './run';

function fixture(startingState: boolean) {
  const [trace] = parseTorchSnapshot(snapshotWithFrames({ startingState }), {
    name: 'frames.json',
  });
  return trace!;
}

/** The export of `row` on the fixture, read back as a trace. */
function exported(row: string, startingState: boolean) {
  const trace = fixture(startingState);
  const snapshot = torchSnapshotOf(peakState(trace, findRow(row)!, null));
  const [back] = parseTorchSnapshot(unpickle(toTorchSnapshotPickle(snapshot)), { name: row });
  return { snapshot, back: back! };
}

describe('a memory-viz export', () => {
  it('states the row’s own settings, expandable segments included, in its settings and segments', () => {
    const { snapshot } = exported('caching-expandable', false);
    expect(snapshot.allocator_settings.PYTORCH_CUDA_ALLOC_CONF).toBe('expandable_segments:True');
    expect(snapshot.allocator_settings.expandable_segments).toBe(true);
    expect(snapshot.segments.length).toBeGreaterThan(0);
    for (const segment of snapshot.segments) expect(segment.is_expandable).toBe(true);
    const plain = exported('caching', false).snapshot;
    expect(plain.allocator_settings.expandable_segments).toBe(false);
    for (const segment of plain.segments) expect(segment.is_expandable).toBe(false);
  });

  it.each([
    ['caching', 'segment_alloc'],
    ['caching-expandable', 'segment_map'],
  ])('holds the segment events of %s (%s), so its replay matches them all', (row, action) => {
    for (const startingState of [false, true]) {
      const { snapshot, back } = exported(row, startingState);
      const events = snapshot.device_traces[0]!.filter((entry) => entry.action === action);
      expect(events.length, `${row}, starting state ${startingState}`).toBeGreaterThan(0);
      if (row === 'caching') {
        // Read back, the window's segments are its events: only the starting state's came before.
        const start = fixture(startingState).start?.segments ?? [];
        const bytes = start.reduce((sum, segment) => sum + segment.size, 0);
        expect(back.meta.torchReservedAtStartBytes).toBe(bytes);
      }
      const [result] = runWorkloads(
        [{ id: row, title: row, description: 'export', trace: back, recordedRow: row }],
        [findRow(row)!],
        null,
        undefined,
        undefined,
        { skipTiming: true },
      );
      const segments = result!.torch!.fidelity!.segments!;
      expect(segments.recorded).toBe(events.length);
      expect(segments.matched).toBe(segments.recorded);
    }
  });
});
