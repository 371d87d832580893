import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bestFit } from '@allot/best-fit';
import type { Allocator } from '@allot/core';
import { pickleFloat, type UnpickledValue, unpickle as unpickleValue } from '@allot/pickle';
import { replay } from '@allot/workloads';
import { readTraces } from '@allot/workloads/node';
import { describe, expect, it } from 'vitest';
import { hasPython, python } from '../test/support/python';
import { tinyFirstFit } from '../test/support/tiny-first-fit';
import { tracePath } from '../test/support/traces';
import {
  type TorchSnapshot,
  toTorchSnapshot,
  toTorchSnapshotJson,
  toTorchSnapshotPickle,
} from './snapshot-export';
import { withStats } from './with-stats';

/** A pickle read back, tuples as `{ tuple: [...] }`, so that they can be told from lists. */
const unpickle = (bytes: Uint8Array) =>
  unpickleValue(bytes, { tuple: (items) => ({ tuple: items }) as unknown as UnpickledValue });

const dir = mkdtempSync(join(tmpdir(), 'allot-stats-snapshot-'));

const SEGMENT_KEYS = [
  'active_size',
  'address',
  'allocated_size',
  'blocks',
  'device',
  'frames',
  'is_expandable',
  'requested_size',
  'segment_pool_id',
  'segment_type',
  'stream',
  'total_size',
];
const BLOCK_KEYS = ['address', 'frames', 'requested_size', 'size', 'state'];

/** Checks the invariants memory_viz relies on. */
function checkFormat(snapshot: TorchSnapshot | Record<string, unknown>): void {
  const s = snapshot as TorchSnapshot;
  expect(Object.keys(s).sort()).toEqual([
    'allocator_settings',
    'device_traces',
    'external_annotations',
    'segments',
  ]);
  for (const segment of s.segments) {
    expect(Object.keys(segment).sort()).toEqual(SEGMENT_KEYS);
    let address = segment.address;
    let allocated = 0;
    for (const block of segment.blocks) {
      expect(Object.keys(block).sort()).toEqual(BLOCK_KEYS);
      expect(block.address).toBe(address); // blocks tile the segment
      expect(['active_allocated', 'active_pending_free', 'inactive']).toContain(block.state);
      if (block.state === 'active_allocated') allocated += block.size;
      address += block.size;
    }
    expect(address).toBe(segment.address + segment.total_size);
    expect(segment.allocated_size).toBe(allocated);
  }
  for (const trace of s.device_traces) {
    for (const entry of trace) {
      expect(typeof entry.time_us).toBe('number');
      if (entry.action === 'oom') expect(entry).toHaveProperty('device_free');
      else expect(entry).toHaveProperty('addr');
    }
  }
}

describe('PyTorch snapshot export', () => {
  it('writes the segment, block and trace fields memory_viz reads', () => {
    const stats = withStats(tinyFirstFit({ capacity: 4096, base: 2 ** 33 }), {
      trace: { clock: () => 1_700_000_000_000.5 },
    });
    const a = stats.allocate(100)!;
    const b = stats.allocate(200, 256)!;
    stats.free(a);
    stats.allocate(1 << 20);
    stats.annotate('forward', 'START');
    const snapshot = toTorchSnapshot(stats);
    checkFormat(snapshot);
    const segment = snapshot.segments[0]!;
    expect(segment).toMatchObject({
      device: 0,
      address: 2 ** 33,
      total_size: 4096,
      allocated_size: 200,
      active_size: 200,
      requested_size: 200,
      stream: 0,
      segment_type: 'large',
      is_expandable: false,
    });
    expect(segment.blocks.find((x) => x.address === b)).toEqual({
      address: b,
      size: 200,
      requested_size: 200,
      state: 'active_allocated',
      frames: [],
    });
    expect(snapshot.device_traces).toHaveLength(1);
    expect(snapshot.device_traces[0]!.map((e) => e.action)).toEqual([
      'alloc',
      'alloc',
      'free_requested',
      'free_completed',
      'oom',
      'snapshot',
    ]);
    expect(snapshot.device_traces[0]![0]).toEqual({
      action: 'alloc',
      addr: a,
      size: 104,
      stream: 0,
      time_us: 1_700_000_000_000_500,
    });
    expect(snapshot.device_traces[0]![4]).toMatchObject({ action: 'oom', device_free: 4096 - 200 });
    expect(snapshot.external_annotations).toEqual([
      { device: 0, stage: 'START', name: 'forward', time_us: 1_700_000_000_000_500 },
    ]);
    expect(snapshot.allocator_settings.max_split_size).toBe(-1);
  });

  it('puts traces under their device and exports gaps as inactive blocks', () => {
    const gappy: Allocator = {
      ...tinyFirstFit({ capacity: 100 }),
      layout: () => ({
        segments: [
          {
            address: 0,
            size: 100,
            pool: 'small',
            blocks: [{ address: 10, size: 20, free: false, requestedSize: 18 }],
          },
        ],
      }),
    };
    const snapshot = toTorchSnapshot(withStats(gappy, { device: 2 }));
    checkFormat(snapshot);
    expect(snapshot.device_traces).toEqual([[], [], []]);
    expect(snapshot.segments[0]!.segment_type).toBe('small');
    expect(snapshot.segments[0]!.device).toBe(2);
    expect(snapshot.segments[0]!.blocks.map((b) => [b.address, b.size, b.state])).toEqual([
      [0, 10, 'inactive'],
      [10, 20, 'active_allocated'],
      [30, 70, 'inactive'],
    ]);
  });

  it('turns recorded stacks into frames', () => {
    const stats = withStats(tinyFirstFit({ capacity: 4096 }), { trace: { stacks: true } });
    stats.allocate(64);
    const snapshot = toTorchSnapshot(stats);
    const frames = snapshot.device_traces[0]![0]!.frames!;
    expect(frames.length).toBeGreaterThan(0);
    expect(frames[0]!.filename).toContain('snapshot-export.test');
    expect(frames[0]!.line).toBeGreaterThan(0);
    expect(snapshot.segments[0]!.blocks[0]!.frames[0]!.filename).toContain('snapshot-export.test');
  });

  it('writes JSON and a pickle with the same content', () => {
    const stats = withStats(tinyFirstFit({ capacity: 4096 }), { trace: { clock: () => 1 } });
    stats.allocate(64);
    const snapshot = stats.snapshot();
    const json = JSON.parse(toTorchSnapshotJson(snapshot));
    checkFormat(json);
    const fromPickle = unpickle(toTorchSnapshotPickle(snapshot)) as Record<string, unknown>;
    const segments = fromPickle.segments as { segment_pool_id: unknown }[];
    expect(segments[0]!.segment_pool_id).toEqual({ tuple: [0, 0] });
    expect(json.segments[0].segment_pool_id).toEqual([0, 0]);
    expect(fromPickle.device_traces).toEqual(json.device_traces.map((t: unknown[]) => t));
  });

  it("writes a pool's garbage_collection_threshold as a Python float, as PyTorch does", () => {
    const stats = withStats(tinyFirstFit({ capacity: 4096 }), { trace: { clock: () => 1 } });
    const snapshot = stats.snapshot();
    const plain = { ...snapshot, allocatorSettings: { garbage_collection_threshold: 0 } };
    const float = {
      ...snapshot,
      allocatorSettings: { garbage_collection_threshold: pickleFloat(0) },
    };
    expect(toTorchSnapshotPickle(plain)).toEqual(toTorchSnapshotPickle(float));
    expect(toTorchSnapshot(plain).allocator_settings.garbage_collection_threshold).toEqual(
      pickleFloat(0),
    );
  });

  it('exports a replay of gcc-hello as a pickle python3 opens', async (context) => {
    const path = tracePath('malloc-real-programs/gcc-hello.trace');
    if (!path) {
      context.skip(
        '../shared/traces/malloc-real-programs/gcc-hello.trace is absent: skipping the replay',
      );
      return;
    }
    // The acceptance case of the stats issue: best fit replays a real program, then exports.
    const stats = withStats(bestFit({ capacity: 64 * 2 ** 20, base: 2 ** 32, alignment: 16 }), {
      trace: { capacity: 1 << 16 },
    });
    const [trace] = await readTraces(path);
    const result = replay(trace!, stats);
    expect(result.failures).toBe(0);
    expect(stats.totals().allocations.current).toBe(5087);
    expect(stats.totals().requestedBytes.peak).toBeGreaterThanOrEqual(9_303_005);
    const file = join(dir, 'gcc-hello.pickle');
    const bytes = toTorchSnapshotPickle(stats);
    writeFileSync(file, bytes);
    const mine = unpickle(bytes) as unknown as TorchSnapshot;
    checkFormat(mine);
    expect(mine.device_traces[0]!.length).toBe(11431 + 2 * 6344 + 1);
    if (!hasPython) {
      context.skip('python3 is absent: checked with the minimal reader only');
      return;
    }
    const out = python(
      [
        'import pickle, sys',
        "d = pickle.load(open(sys.argv[1], 'rb'))",
        "print(len(d['segments']))",
        "b = d['segments'][0]['blocks']",
        "print(sum(1 for x in b if x['state'] == 'active_allocated'))",
        "print(len(d['device_traces'][0]))",
      ].join('\n'),
      file,
    );
    expect(out.trim().split('\n')).toEqual(['1', '5087', String(11431 + 2 * 6344 + 1)]);
  });
});
