import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { type UnpickledValue, unpickle } from '@allot/pickle';
import { afterAll, describe, expect, it } from 'vitest';
import { findTracesDir } from '../readers/node-traces';
import {
  type TorchSnapshotOptions,
  type TorchSnapshotSummary,
  torchSnapshotChunks,
} from './snapshot-generator';

const hasPython = spawnSync('python3', ['--version']).status === 0;
const run = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'allot-snapshot-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The snapshot's chunks, copied, with the event loop free between them. */
async function generate(options: TorchSnapshotOptions) {
  const chunks: Uint8Array[] = [];
  const generator = torchSnapshotChunks(options);
  let result = generator.next();
  while (!result.done) {
    chunks.push(result.value.slice());
    await setImmediate();
    result = generator.next();
  }
  const bytes = Buffer.concat(chunks);
  return { bytes, chunks, summary: result.value as TorchSnapshotSummary };
}

/** Whether CPython pickles what it loads from `bytes` back to exactly `bytes`. */
async function cpythonRedumps(bytes: Uint8Array, name: string): Promise<string> {
  const path = join(scratch, `${name}.pickle`);
  writeFileSync(path, bytes);
  const code = [
    'import pickle, sys',
    'b = open(sys.argv[1], "rb").read()',
    'r = pickle.dumps(pickle.loads(b), protocol=4)',
    'n = next((i for i in range(min(len(b), len(r))) if b[i] != r[i]), min(len(b), len(r)))',
    'print("identical" if r == b else f"differs at byte {n} of {len(b)} (python: {len(r)})")',
  ].join('\n');
  const { stdout } = await run('python3', ['-c', code, path]);
  return stdout.trim();
}

/** The snapshot's dict, read back with this package's own reader. */
function read(bytes: Uint8Array): { [key: string]: UnpickledValue } {
  return unpickle(bytes) as { [key: string]: UnpickledValue };
}

type Entry = { action: string; addr: number; size: number; frames?: unknown };
type Segment = { address: number; total_size: number; blocks: Block[]; frames: unknown };
type Block = { address: number; size: number; state: string; requested_size: number };

describe('torchSnapshotChunks: CPython exactness', () => {
  const cases: [string, TorchSnapshotOptions][] = [
    ['no stacks', { events: 3000, depth: 0 }],
    ['one frame per stack (APPEND)', { events: 2000, depth: 1, devices: 3, seed: 7 }],
    ['shared frames', { events: 4000, depth: 8, sharedFrames: 1 }],
    [
      'fresh frames, fresh strings',
      { events: 3000, depth: 6, sharedFrames: 0, sharedStrings: false },
    ],
    ['half shared, two devices', { events: 3000, depth: 6, sharedFrames: 0.5, devices: 2 }],
    [
      'stacks over 1000 frames (two APPENDS groups)',
      { events: 60, depth: 1001, sharedFrames: 0.5 },
    ],
  ];
  it.skipIf(!hasPython).each(cases)(
    '%s: pickle.dumps(pickle.loads(b), protocol=4) == b',
    async (name, options) => {
      const { bytes, summary } = await generate(options);
      expect(summary.bytes).toBe(bytes.length);
      expect(bytes.length).toBeGreaterThan(64 * 1024); // more than one frame
      expect(await cpythonRedumps(bytes, name.replace(/\W+/g, '-'))).toBe('identical');
    },
  );

  it.skipIf(!hasPython)('writes any value a pickle holds as CPython does', async () => {
    const keyed = (count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i % 3 === 0 ? 'a' : i]));
    const base = {
      segments: [],
      device_traces: [[]],
      allocator_settings: {
        garbage_collection_threshold: 0,
        fraction: 0.25,
        nan: Number.NaN,
        minus_infinity: Number.NEGATIVE_INFINITY,
        ints: [
          0,
          255,
          256,
          65535,
          65536,
          -1,
          -129,
          2 ** 31 - 1,
          -(2 ** 31),
          2 ** 31,
          -(2 ** 31) - 1,
        ],
        longs: [
          2 ** 47,
          2 ** 48 - 1,
          2 ** 53 - 1,
          2n ** 64n,
          -(2n ** 63n),
          -(2n ** 70n) - 1n,
          2 ** 60,
        ],
        strings: [
          '',
          'a',
          'é',
          'Ā',
          'ab',
          'é'.repeat(200),
          '🙂 ok',
          'lone \ud800 surrogate',
          'x'.repeat(300),
        ],
        long_string: 'y'.repeat(70_000),
        bytes: [new Uint8Array(0), Uint8Array.of(7), Uint8Array.of(7), new Uint8Array(300)],
        long_bytes: new Uint8Array(70_000).fill(1),
        flags: [true, false, null],
        lists: [
          [1],
          Array.from({ length: 1000 }, (_, i) => i),
          Array.from({ length: 2001 }, () => 'a'),
        ],
        dicts: [keyed(1), keyed(1000), keyed(2000), keyed(2001)],
        segment_pool_id: [1, 2],
      },
      external_annotations: [{ stage: 'START', name: 'step', device: 0, time_us: 1 }],
    };
    const { bytes } = await generate({ base, depth: 0, chunkBytes: 4096 });
    expect(await cpythonRedumps(bytes, 'values')).toBe('identical');
  });

  const traces = findTracesDir();
  const real = traces === null ? null : join(traces, 'pytorch-h100', 'train-default.pickle.gz');
  const hasReal = real !== null && existsSync(real);

  it.skipIf(!hasReal)(
    'gives back a snapshot PyTorch wrote, byte for byte, at depth 0',
    async () => {
      const original = gunzipSync(readFileSync(real!));
      const { bytes, summary } = await generate({ base: unpickle(original), depth: 0 });
      expect(summary).toMatchObject({ mode: 'base', events: 51_155, segments: 134 });
      expect(Buffer.compare(bytes, original)).toBe(0);
    },
  );

  it.skipIf(!hasReal || !hasPython)(
    'adds stacks to a real snapshot, keeping the rest',
    async () => {
      const original = gunzipSync(readFileSync(real!));
      const base = unpickle(original) as { [key: string]: UnpickledValue };
      const { bytes } = await generate({ base, depth: 4, sharedFrames: 0.5 });
      expect(await cpythonRedumps(bytes, 'real-with-stacks')).toBe('identical');
      // CPython compares, so that this worker's loop stays free.
      const path = join(scratch, 'real.pickle');
      writeFileSync(path, original);
      const code = [
        'import pickle, sys',
        'a = pickle.load(open(sys.argv[1], "rb")); b = pickle.load(open(sys.argv[2], "rb"))',
        'ea, eb = a["device_traces"][0], b["device_traces"][0]',
        'same = [{k: v for k, v in e.items() if k != "frames"} for e in eb] == ea',
        'stacks = all(len(e["frames"]) == 4 for e in eb)',
        'active = [k for s in b["segments"] for k in s["blocks"] if k["state"] != "inactive"]',
        'blocks = all(len(k["frames"]) == 4 for k in active)',
        'print(same, stacks, blocks, a["segments"][0]["total_size"] == b["segments"][0]["total_size"])',
      ].join('\n');
      const { stdout } = await run('python3', [
        '-c',
        code,
        path,
        join(scratch, 'real-with-stacks.pickle'),
      ]);
      expect(stdout.trim()).toBe('True True True True');
    },
  );

  it.skipIf(hasPython)('skips the CPython comparisons: python3 is not on PATH', () => {
    console.warn('python3 not found: the byte-for-byte comparisons with CPython were skipped');
  });
});

describe('torchSnapshotChunks', () => {
  it('is deterministic: same seed, same bytes; another seed, other bytes', async () => {
    const options = { events: 2000, depth: 4, sharedFrames: 0.5 };
    const a = await generate({ ...options, seed: 3 });
    const b = await generate({ ...options, seed: 3 });
    const c = await generate({ ...options, seed: 4 });
    expect(Buffer.compare(a.bytes, b.bytes)).toBe(0);
    expect(Buffer.compare(a.bytes, c.bytes)).not.toBe(0);
  });

  it('hands out the file in bounded chunks', async () => {
    const chunkBytes = 16 * 1024;
    const { chunks, bytes } = await generate({ events: 8000, depth: 8, chunkBytes });
    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks.slice(0, -1))
      expect(chunk.length).toBeGreaterThanOrEqual(chunkBytes);
    // A chunk is what was final when it passed chunkBytes: at most one open frame (64 KiB) more.
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(chunkBytes + 96 * 1024);
    expect(bytes[0]).toBe(0x80);
    expect(bytes.at(-1)).toBe(0x2e); // STOP
  });

  it('keeps the end state consistent with the trace', async () => {
    const { bytes, summary } = await generate({ events: 20_000, depth: 2, devices: 2 });
    const snapshot = read(bytes);
    const segments = snapshot.segments as unknown as (Segment & { device: number })[];
    const traces = snapshot.device_traces as unknown as Entry[][];
    expect(summary).toMatchObject({ segments: segments.length });
    expect(summary.events).toBe(traces[0]!.length + traces[1]!.length);
    // A step's entries (a free's two, an allocation's segment entries) are not parted.
    expect(summary.events - 20_000).toBeGreaterThanOrEqual(0);
    expect(summary.events - 20_000).toBeLessThan(10);
    traces.forEach((entries, device) => {
      const held = new Set<number>();
      const live = new Map<number, number>();
      for (const { action, addr, size } of entries) {
        if (action === 'segment_alloc') held.add(addr);
        else if (action === 'segment_free') held.delete(addr);
        else if (action === 'alloc') live.set(addr, size);
        else if (action === 'free_completed') live.delete(addr);
      }
      const mine = segments.filter((s) => s.device === device);
      expect(new Set(mine.map((s) => s.address))).toEqual(held);
      const allocated = mine.flatMap((s) => s.blocks.filter((b) => b.state === 'active_allocated'));
      expect(new Map(allocated.map((b) => [b.address, b.requested_size]))).toEqual(live);
      for (const segment of mine) {
        expect(segment.blocks.reduce((sum, b) => sum + b.size, 0)).toBe(segment.total_size);
        expect(segment.blocks[0]!.address).toBe(segment.address);
      }
    });
  });

  it('rounds requests as PyTorch does: 512 B blocks, 2 MiB small and 20 MiB large segments', async () => {
    const snapshot = read((await generate({ events: 5000, depth: 0 })).bytes);
    const segments = snapshot.segments as unknown as (Segment & { segment_type: string })[];
    for (const segment of segments) {
      for (const block of segment.blocks) expect(block.size % 512).toBe(0);
      if (segment.segment_type === 'small') expect(segment.total_size).toBe(2 << 20);
      else expect(segment.total_size % (2 << 20)).toBe(0);
    }
    expect(segments.some((s) => s.total_size === 20 << 20)).toBe(true);
  });

  it('comes near a target size', async () => {
    const { summary } = await generate({ targetBytes: 3_000_000, depth: 6, sharedFrames: 0.5 });
    expect(summary.bytes / 3_000_000).toBeGreaterThan(0.95);
    expect(summary.bytes / 3_000_000).toBeLessThan(1.05);
  });

  it('refuses options out of range', () => {
    expect(() => torchSnapshotChunks({ sharedFrames: 1.5 })).toThrow(/sharedFrames must be in/);
    expect(() => torchSnapshotChunks({ depth: -1 })).toThrow(/depth must be an integer/);
    expect(() => torchSnapshotChunks({ devices: 0 })).toThrow(/devices must be an integer/);
    expect(() => torchSnapshotChunks({ base: [] }).next()).toThrow(/expected a dict/);
  });
});
