/**
 * State dumps: snapshots whose devices recorded no allocation, read as a JSON value and as a
 * pickle (the streaming reader), in today's format and in PyTorch 2.0's (blocks with a `history`
 * and no `address`), worked out by hand.
 */
import { type PickleValue, pickle } from '@allot/pickle';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors';
import { EventKind, type Trace } from '../trace';
import { parseTorchSnapshot } from './snapshot-traces';
import { parseTraces } from './trace-stream';

const MiB = 2 ** 20;
const A = 0x7f00_0000_0000; // a large segment: two tensors, a hole, a tensor, a free tail
const B = 0x7f00_1000_0000; // a small segment: a block freed and pending on a stream, the rest free
const C = 0x7f00_2000_0000; // a large segment with nothing live: cached

const frames = (line: number, name: string) => [
  {
    filename: '/usr/lib/python3/site-packages/torch/nn/modules/linear.py',
    line: 125,
    name: 'forward',
  },
  { filename: 'model.py', line, name },
  { filename: 'train.py', line: 31, name: 'train_step' },
];

/** A state dump of one device as `torch.cuda.memory._snapshot()` returns it (frames on blocks). */
function stateDump(traces: unknown = [[{ action: 'snapshot', addr: 0, size: 0, stream: 0 }]]) {
  const block = (address: number, size: number, requested: number, state: string, f?: unknown) => ({
    address,
    size,
    requested_size: requested,
    state,
    frames: f ?? [],
  });
  return {
    segments: [
      {
        device: 0,
        address: B,
        total_size: 2 * MiB,
        stream: 7,
        segment_type: 'small',
        is_expandable: false,
        blocks: [
          block(B, 4096, 4000, 'active_pending_free', frames(77, 'bias')),
          block(B + 4096, 2 * MiB - 4096, 0, 'inactive'),
        ],
      },
      {
        device: 0,
        address: A,
        total_size: 40 * MiB,
        stream: 0,
        segment_type: 'large',
        is_expandable: false,
        blocks: [
          block(A, 8 * MiB, 8 * MiB - 100, 'active_allocated', frames(40, 'embed')),
          block(A + 8 * MiB, 16 * MiB, 16 * MiB, 'active_allocated', frames(88, 'attention')),
          block(A + 24 * MiB, 6 * MiB, 0, 'inactive'),
          block(A + 30 * MiB, 4 * MiB, 4 * MiB, 'active_allocated', frames(40, 'embed')),
          block(A + 34 * MiB, 6 * MiB, 0, 'inactive'),
        ],
      },
      {
        device: 0,
        address: C,
        total_size: 20 * MiB,
        stream: 0,
        segment_type: 'large',
        is_expandable: false,
        blocks: [block(C, 20 * MiB, 0, 'inactive')],
      },
    ],
    device_traces: traces,
    allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: 'max_split_size_mb:128' },
  };
}

/** The trace of `snapshot` read both ways, the same; the pickled one is returned. */
async function bothWays(snapshot: Record<string, unknown>): Promise<Trace[]> {
  const whole = parseTorchSnapshot(snapshot, { name: 'dump' });
  const streamed = await parseTraces(pickle(snapshot as PickleValue), { name: 'dump' });
  const essence = (trace: Trace) => ({
    name: trace.name,
    kind: [...trace.kind],
    size: [...trace.size],
    stream: trace.stream ? [...trace.stream] : null,
    meta: trace.meta,
    dump: trace.dump,
    start: trace.start,
    frames: trace.frames ? [...trace.frames.entries()] : null,
  });
  expect(streamed.map(essence)).toEqual(whole.map(essence));
  return streamed;
}

describe('a state dump', () => {
  it('is its segments and blocks, its live blocks allocated in address order', async () => {
    const [trace, ...more] = await bothWays(stateDump());
    expect(more).toEqual([]);
    const t = trace!;
    // The live blocks (allocated, and pending on a stream) in address order, their requests.
    expect([...t.kind]).toEqual([0, 0, 0, 0].map(() => EventKind.Alloc));
    expect([...t.size]).toEqual([8 * MiB - 100, 16 * MiB, 4 * MiB, 4000]);
    expect(t.start).toBeUndefined();
    expect(t.meta).toMatchObject({
      format: 'torch-snapshot',
      stateDump: true,
      torchReservedAtEndBytes: 62 * MiB,
      torchAllocConf: 'max_split_size_mb:128',
    });
    const dump = t.dump!;
    expect(dump.entries).toBe(1);
    expect(dump.segments.map((s) => [s.address, s.size, s.pool, s.stream])).toEqual([
      [A, 40 * MiB, 'large', 0],
      [B, 2 * MiB, 'small', 1],
      [C, 20 * MiB, 'large', 0],
    ]);
    expect(dump.segments[0]!.blocks).toEqual([
      { offset: 0, size: 8 * MiB, requested: 8 * MiB - 100, state: 'allocated', id: 0 },
      { offset: 8 * MiB, size: 16 * MiB, requested: 16 * MiB, state: 'allocated', id: 1 },
      { offset: 24 * MiB, size: 6 * MiB, requested: 6 * MiB, state: 'free', id: -1 },
      { offset: 30 * MiB, size: 4 * MiB, requested: 4 * MiB, state: 'allocated', id: 2 },
      { offset: 34 * MiB, size: 6 * MiB, requested: 6 * MiB, state: 'free', id: -1 },
    ]);
    expect(dump.segments[1]!.blocks[0]).toEqual({
      offset: 0,
      size: 4096,
      requested: 4000,
      state: 'pending-free',
      id: 3,
    });
    // Each live block's stack, by its block id.
    expect(t.frames?.get(1)?.[1]).toEqual({ filename: 'model.py', line: 88, name: 'attention' });
    expect(t.frames?.get(3)?.[1]).toEqual({ filename: 'model.py', line: 77, name: 'bias' });
    expect(t.stream ? t.stream[3] : 0).toBe(1);
  });

  it('is read whether its device trace is empty, missing or holds only segment frees', async () => {
    for (const traces of [
      [[]],
      [],
      [[{ action: 'segment_free', addr: 0x7f00_3000_0000, size: 2 * MiB, stream: 0 }]],
    ]) {
      const [trace] = await bothWays(stateDump(traces));
      expect(trace!.dump?.segments.length).toBe(3);
      expect(trace!.length).toBe(4);
    }
  });

  it('names each device a trace, a recording beside a dump', async () => {
    const snapshot = stateDump([
      [],
      [
        { action: 'alloc', addr: 0x10_0000, size: 512, stream: 0 },
        { action: 'free_completed', addr: 0x10_0000, size: 512, stream: 0 },
      ],
    ]);
    const traces = await bothWays(snapshot);
    expect(traces.map((t) => [t.name, t.dump !== undefined])).toEqual([
      ['dump#cuda:0', true],
      ['dump#cuda:1', false],
    ]);
    // Segments on a device past the end of `device_traces` make it a dump too.
    const moved = stateDump([[]]);
    for (const segment of moved.segments) segment.device = 2;
    expect((await bothWays(moved)).map((t) => t.name)).toEqual(['dump#cuda:2']);
  });

  it("reads PyTorch 2.0's blocks: no address, the stack and request in the newest history", async () => {
    const history = (addr: number, size: number, line: number) => [
      { addr, real_size: size, frames: frames(line, 'new') },
      { addr, real_size: 64, frames: frames(1, 'old') },
    ];
    const snapshot = {
      segments: [
        {
          device: 0,
          address: A,
          total_size: 40 * MiB,
          allocated_size: 24 * MiB,
          stream: 0,
          segment_type: 'large',
          blocks: [
            { size: 8 * MiB, state: 'active_allocated', history: history(A, 8 * MiB - 7, 50) },
            { size: 16 * MiB, requested_size: 16 * MiB, state: 'active_allocated' },
            { size: 16 * MiB, requested_size: 0, state: 'inactive' },
          ],
        },
      ],
      device_traces: [[{ action: 'snapshot', addr: 0, size: 24 * MiB, stream: 0 }]],
    };
    const [trace] = await bothWays(snapshot);
    expect(
      trace!.dump!.segments[0]!.blocks.map((b) => [b.offset, b.size, b.requested, b.state]),
    ).toEqual([
      [0, 8 * MiB, 8 * MiB - 7, 'allocated'],
      [8 * MiB, 16 * MiB, 16 * MiB, 'allocated'],
      [24 * MiB, 16 * MiB, 16 * MiB, 'free'],
    ]);
    expect(trace!.frames?.get(0)?.[1]).toEqual({ filename: 'model.py', line: 50, name: 'new' });
    expect(trace!.frames?.get(1) ?? []).toEqual([]);
  });

  it('refuses a dump whose blocks contradict its segments, naming the block', async () => {
    const outside = stateDump();
    outside.segments[1]!.blocks[4]!.size = 7 * MiB;
    const overlapping = stateDump();
    overlapping.segments[1]!.blocks[3]!.address = A + 29 * MiB;
    for (const snapshot of [outside, overlapping]) {
      expect(() => parseTorchSnapshot(snapshot, { name: 'dump' })).toThrow(TraceFormatError);
      await expect(
        parseTraces(pickle(snapshot as unknown as PickleValue), { name: 'dump' }),
      ).rejects.toThrow(
        /^dump \(device_traces\[0\]\): event 1: expected blocks inside their segment, one after another, found a block of \d+ bytes at 0x7f/,
      );
    }
  });

  it('is refused with neither an allocation nor a segment, saying what a dump has', async () => {
    await expect(
      parseTraces(pickle({ segments: [], device_traces: [[]] }), { name: 'nothing' }),
    ).rejects.toThrow(/or the segments of a state dump, found empty device traces and no segments/);
  });
});
