import { describe, expect, it } from 'vitest';
import { EventKind } from '../trace';
import { parseTorchSnapshot } from './snapshot-traces';

const MiB = 2 ** 20;
const P = 0x1000_0000; // a large segment held before the recording
const S = 0x2000_0000; // a small segment held before the recording
const W = 0x3000_0000; // a segment the recording saw allocated
const F = 0x4000_0000; // a segment held before and released inside the recording

function event(action: string, addr: number, size: number) {
  return { action, addr, size, stream: 0, time_us: 0 };
}

/** A snapshot whose end state and trace imply a starting state worked out by hand. */
function snapshot() {
  return {
    segments: [
      {
        device: 0,
        address: P,
        total_size: 20 * MiB,
        stream: 0,
        segment_type: 'large',
        is_expandable: false,
        blocks: [
          // Weights: live from before the recording to its end, never seen in the trace.
          { address: P, size: 4 * MiB, requested_size: 4_000_000, state: 'active_allocated' },
          { address: P + 4 * MiB, size: 16 * MiB, requested_size: 0, state: 'inactive' },
        ],
      },
      {
        device: 0,
        address: S,
        total_size: 2 * MiB,
        stream: 0,
        segment_type: 'small',
        is_expandable: false,
        blocks: [
          { address: S, size: 512, requested_size: 100, state: 'active_allocated' },
          { address: S + 512, size: 2 * MiB - 512, requested_size: 0, state: 'inactive' },
        ],
      },
      {
        device: 0,
        address: W,
        total_size: 20 * MiB,
        stream: 0,
        segment_type: 'large',
        is_expandable: false,
        blocks: [{ address: W, size: 20 * MiB, requested_size: 0, state: 'inactive' }],
      },
    ],
    device_traces: [
      [
        // A block allocated before the recording, freed inside it.
        event('free_requested', P + 8 * MiB, 2_000_000),
        event('free_completed', P + 8 * MiB, 2_000_000),
        event('segment_alloc', W, 20 * MiB),
        event('alloc', W, 3 * MiB),
        event('free_requested', W, 3 * MiB),
        event('free_completed', W, 3 * MiB),
        event('segment_free', F, 2 * MiB),
      ],
    ],
    allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: '' },
  };
}

describe('PyTorch snapshot: the starting state', () => {
  it('rebuilds the segments and live blocks at the first event from the end state and the trace', () => {
    const [trace] = parseTorchSnapshot(snapshot(), { name: 's' });
    expect(trace!.start).toEqual({
      events: 3,
      fidelity: 'exact',
      segments: [
        {
          address: P,
          size: 20 * MiB,
          pool: 'large',
          stream: 0,
          expandable: false,
          blocks: [
            { id: 0, offset: 0, requested: 4_000_000, size: 4 * MiB },
            { id: 1, offset: 8 * MiB, requested: 2_000_000 },
          ],
        },
        {
          address: S,
          size: 2 * MiB,
          pool: 'small',
          stream: 0,
          expandable: false,
          blocks: [{ id: 2, offset: 0, requested: 100, size: 512 }],
        },
        { address: F, size: 2 * MiB, pool: 'small', stream: 0, expandable: false, blocks: [] },
      ],
    });
    // The leading events allocate the starting blocks in address order; block 1 is freed later.
    expect([...trace!.kind.slice(0, 3)]).toEqual([
      EventKind.Alloc,
      EventKind.Alloc,
      EventKind.Alloc,
    ]);
    expect([...trace!.size.slice(0, 3)]).toEqual([4_000_000, 2_000_000, 100]);
    expect(trace!.kind[3]).toBe(EventKind.Free);
    expect(trace!.id[3]).toBe(1);
    // PyTorch's own decision in the window, and the allocation it served.
    expect(trace!.recordedSegments).toEqual([{ event: 4, size: 20 * MiB, address: W }]);
    expect(trace!.kind[4]).toBe(EventKind.Alloc);
    expect(trace!.size[4]).toBe(3 * MiB);
    expect(trace!.meta).toMatchObject({
      startState: 'exact',
      torchReservedAtStartBytes: 24 * MiB, // P, S and F
      torchPeakReservedBytes: 44 * MiB, // and W
      torchSegmentAllocs: 1,
      torchSegmentFrees: 1,
    });
  });

  it('gives no starting state, and says why, when a live block lies in no segment', () => {
    const broken = snapshot();
    broken.device_traces[0]!.unshift(
      event('free_requested', 0x5000_0000, 4096),
      event('free_completed', 0x5000_0000, 4096),
    );
    const [trace] = parseTorchSnapshot(broken, { name: 's' });
    expect(trace!.start).toBeUndefined();
    expect(trace!.meta.startState).toMatch(/lies in no segment/);
    // The blocks are still allocated up front, so every allocator sees the same memory.
    expect(trace!.meta.preexistingBlocks).toBe(4);
  });

  it('counts an expandable segment at the bytes mapped before the window', () => {
    const expandable = {
      segments: [
        {
          device: 0,
          address: P,
          total_size: 60 * MiB,
          stream: 0,
          segment_type: 'large',
          is_expandable: true,
          blocks: [
            { address: P, size: 10 * MiB, requested_size: 10 * MiB, state: 'active_allocated' },
            { address: P + 10 * MiB, size: 50 * MiB, requested_size: 0, state: 'inactive' },
          ],
        },
      ],
      device_traces: [
        [
          event('segment_map', P + 20 * MiB, 40 * MiB),
          event('alloc', P + 10 * MiB, 30 * MiB),
          event('free_completed', P + 10 * MiB, 30 * MiB),
        ],
      ],
      allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:True' },
    };
    const [trace] = parseTorchSnapshot(expandable, { name: 'e' });
    expect(trace!.start!.segments).toEqual([
      {
        address: P,
        size: 20 * MiB,
        pool: 'large',
        stream: 0,
        expandable: true,
        blocks: [{ id: 0, offset: 0, requested: 10 * MiB, size: 10 * MiB }],
      },
    ]);
    expect(trace!.recordedSegments).toEqual([{ event: 1, size: 40 * MiB, address: P + 20 * MiB }]);
  });
});

describe('PyTorch snapshot: times, frames and the recorded reserved line', () => {
  it('carries each event’s time_us, the frames of allocations, and PyTorch’s reserved bytes', () => {
    const timed = snapshot();
    const frames = [
      { filename: 'train.py', line: 42, name: 'forward' },
      { filename: 'torch/nn/modules/linear.py', line: 125, name: 'forward' },
    ];
    timed.device_traces[0]!.forEach((entry, i) => {
      entry.time_us = 1_000 + 10 * i;
    });
    (timed.device_traces[0]![3] as Record<string, unknown>).frames = frames;
    const [trace] = parseTorchSnapshot(timed, { name: 's' });
    // Three leading events (the starting state) take the time of the first event; then the
    // entries' own (free_requested entries are not events: the frees happen at free_completed).
    expect([...trace!.time!]).toEqual([1_010, 1_010, 1_010, 1_010, 1_030, 1_050]);
    expect(trace!.frames!.get(trace!.id[4]!)).toEqual(frames);
    expect(trace!.frames!.size).toBe(1);
    // 24 MiB at the start, the segment_alloc of W before event 4; the segment_free after the last.
    const MiB24 = 24 * MiB;
    expect([...trace!.recordedReserved!]).toEqual([
      MiB24,
      MiB24,
      MiB24,
      MiB24,
      MiB24 + 20 * MiB,
      MiB24 + 20 * MiB,
    ]);
  });

  it('has no time or frames when the recording has none', () => {
    const bare = snapshot();
    for (const entry of bare.device_traces[0]!) delete (entry as { time_us?: number }).time_us;
    const [trace] = parseTorchSnapshot(bare, { name: 's' });
    expect(trace!.time).toBeUndefined();
    expect(trace!.frames).toBeUndefined();
  });
});
