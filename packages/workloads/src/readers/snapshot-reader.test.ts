/**
 * The streaming snapshot reader: the same traces whatever the chunks (one chunk or many), gzip
 * undone on the way by `node:zlib` or `DecompressionStream`, progress that ends at the file's
 * length, and stacks kept once per distinct frame.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { type PickleValue, pickle as pickleValue, unpickle } from '@allot/pickle';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors';
import { torchSnapshotChunks } from '../generators/snapshot-generator';
import { Random } from '../random';
import type { Trace } from '../trace';
import { fileChunks, findTracesDir, readTraces } from './node-traces';
import { SnapshotReader } from './snapshot-reader';
import { parseTorchSnapshot } from './snapshot-traces';
import {
  type Gunzip,
  parseTraces,
  type ReadProgress,
  streamTraces,
  webGunzip,
} from './trace-stream';

const dir = mkdtempSync(join(tmpdir(), 'allot-snapshot-stream-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `bytes` as an async stream of chunks of seeded random lengths up to `most`. */
async function* chunked(bytes: Uint8Array, seed: number, most: number): AsyncGenerator<Uint8Array> {
  const random = new Random(seed);
  for (let at = 0; at < bytes.length; ) {
    const n = 1 + Math.floor(random.next() * most);
    yield bytes.subarray(at, at + n);
    at += n;
  }
}

/** A digest of the first `length` elements of `array`, so big traces compare in a few ms. */
function digest(
  array: ArrayLike<number> & {
    buffer: ArrayBufferLike;
    byteOffset: number;
    BYTES_PER_ELEMENT: number;
  },
  length: number,
): string {
  const bytes = new Uint8Array(array.buffer, array.byteOffset, length * array.BYTES_PER_ELEMENT);
  return createHash('sha256').update(bytes).digest('hex');
}

/** What a test compares of a trace: its events, metadata, starting state and stacks. */
function essence(trace: Trace) {
  const frames: string[] = [];
  for (const [block, stack] of trace.frames ?? []) {
    frames.push(`${block}:${stack.map((f) => `${f.name}@${f.filename}:${f.line}`).join('<')}`);
  }
  return {
    name: trace.name,
    length: trace.length,
    kind: digest(trace.kind, trace.length),
    id: digest(trace.id, trace.length),
    size: digest(trace.size, trace.length),
    time: trace.time ? digest(trace.time, trace.length) : null,
    reserved: trace.recordedReserved ? digest(trace.recordedReserved, trace.length) : null,
    meta: trace.meta,
    start: trace.start,
    recordedSegments: trace.recordedSegments,
    frames: createHash('sha256').update(frames.join('\n')).digest('hex'),
    stacks: frames.length,
  };
}

/** A snapshot as the writer pickles it. */
const pickle = (snapshot: Record<string, unknown>) => pickleValue(snapshot as PickleValue);

const FRAME_A = { filename: 'model.py', line: 88, name: 'attention' };
const FRAME_B = { filename: 'train.py', line: 31, name: 'train_step' };

/** A snapshot with stacks: two segments' worth of entries, frames shared between entries. */
function snapshotWithStacks(entries: number): Record<string, unknown> {
  const trace: Record<string, unknown>[] = [
    { action: 'segment_alloc', addr: 1 << 30, size: 2 ** 24, stream: 0, time_us: 1 },
  ];
  for (let i = 0; i < entries; i++) {
    const addr = (1 << 30) + (i % 8) * 2 ** 20;
    const frames = i % 2 === 0 ? [FRAME_A, FRAME_B] : [{ ...FRAME_B, line: 32 + (i % 3) }, FRAME_B];
    trace.push({ action: 'alloc', addr, size: 2 ** 20, stream: 0, time_us: 2 + i, frames });
    trace.push({
      action: 'free_completed',
      addr,
      size: 2 ** 20,
      stream: 0,
      time_us: 2 + i,
      frames: [],
    });
  }
  return {
    segments: [
      {
        device: 0,
        address: 1 << 30,
        total_size: 2 ** 24,
        stream: 0,
        segment_type: 'large',
        blocks: [],
      },
    ],
    device_traces: [trace],
    allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: '' },
  };
}

describe('the streaming snapshot reader', () => {
  const bytes = pickle(snapshotWithStacks(300));

  it('reads the same traces in chunks of any length as in one piece', async () => {
    const once = (await parseTraces(bytes, { name: 's' })).map(essence);
    for (const [seed, most] of [
      [1, 7],
      [2, 64],
      [3, 4096],
    ] as const) {
      const streamed = await streamTraces(chunked(bytes, seed, most), { name: 's' });
      expect(streamed.map(essence)).toEqual(once);
    }
  });

  it('keeps each distinct frame once and gives each block its stack', async () => {
    const stream = new SnapshotReader({ name: 's' });
    stream.push(bytes);
    const records = stream.end();
    // FRAME_A, FRAME_B and three variants of FRAME_B's line.
    expect(records.stacks.frames).toHaveLength(5);
    const [trace] = await parseTraces(bytes, { name: 's' });
    expect(trace!.frames?.get(0)).toEqual([FRAME_A, FRAME_B]);
    expect(trace!.frames?.get(1)).toEqual([{ ...FRAME_B, line: 33 }, FRAME_B]);
    expect(trace!.frames?.size).toBe(300);
    expect(trace!.frames?.get(0)).toBe(trace!.frames?.get(2));
  });

  it('gives a block live throughout the window the stack the end state records for it', async () => {
    const weights = { filename: 'model.py', line: 12, name: 'Model.__init__' };
    const snapshot = snapshotWithStacks(4);
    const segment = (snapshot.segments as Record<string, unknown>[])[0]!;
    segment.blocks = [
      {
        address: (1 << 30) + 2 ** 23,
        size: 2 ** 21,
        requested_size: 2 ** 21,
        state: 'active_allocated',
        frames: [weights, FRAME_B],
      },
    ];
    const [trace] = await streamTraces(chunked(pickle(snapshot), 6, 300), { name: 'w' });
    expect(trace!.meta.preexistingBlocks).toBe(1);
    expect(trace!.frames?.get(0)).toEqual([weights, FRAME_B]);
    expect(trace!.frames?.get(1)).toEqual([FRAME_A, FRAME_B]);
  });

  it("reads each recorded out-of-memory error: the request, device_free, and PyTorch's figures then", async () => {
    const snapshot = snapshotWithStacks(4);
    const trace = (snapshot.device_traces as Record<string, unknown>[][])[0]!;
    // After the segment (16 MiB) and the first allocation and its free, then again at the end.
    trace.splice(3, 0, {
      action: 'oom',
      size: 2 ** 26,
      device_free: 2 ** 20,
      stream: 7,
      time_us: 3,
      frames: [FRAME_A, FRAME_B],
    });
    trace.push({ action: 'oom', size: 0, device_free: -1, stream: 0, time_us: 99 });
    const [read] = await streamTraces(chunked(pickle(snapshot), 8, 200), { name: 'o' });
    expect(read!.meta.torchOoms).toBe(2);
    const [first, second] = read!.recordedOoms!;
    expect(first).toEqual({
      entry: 3,
      event: 2,
      sizeBytes: 2 ** 26,
      stream: 7,
      streamIndex: -1, // no event was on stream 7
      timeUs: 3,
      deviceFreeBytes: 2 ** 20,
      capacityBytes: 2 ** 24 + 2 ** 20,
      reservedBytes: 2 ** 24,
      allocatedBytes: 0,
      frames: [FRAME_A, FRAME_B],
    });
    expect(second!.problem).toBe('a size of 0 and a device_free of -1');
    expect(second!.capacityBytes).toBeUndefined();
    expect(second!.streamIndex).toBe(0);
    expect(read!.length).toBe(8);
    // Each event's entry in the recording (index + 1), the oom entries skipped over.
    expect(read!.location?.[3]).toBe(6);
  });

  it('undoes gzip with node:zlib and with DecompressionStream alike, and reports progress', async () => {
    const file = join(dir, 's.pickle.gz');
    writeFileSync(file, gzipSync(bytes));
    const reports: ReadProgress[] = [];
    const fromFile = await readTraces(file, { onProgress: (p) => reports.push(p) });
    const fromWeb = await streamTraces(chunked(readFileSync(file), 4, 100), {
      name: 's.pickle.gz',
      gunzip: webGunzip,
    });
    expect(fromWeb.map(essence)).toEqual(fromFile.map(essence));
    expect(fromFile.map(essence)).toEqual(
      (await parseTraces(gzipSync(bytes), { name: 's.pickle.gz' })).map(essence),
    );
    const last = reports[reports.length - 1]!;
    expect(last.done).toBe(true);
    expect(last.bytesRead).toBe(statSync(file).size);
    expect(last.totalBytes).toBe(statSync(file).size);
    expect(last.bytesDecoded).toBe(bytes.length);
    expect(last.events).toBe(601);
    for (let i = 1; i < reports.length; i++) {
      expect(reports[i]!.bytesRead).toBeGreaterThanOrEqual(reports[i - 1]!.bytesRead);
    }
  });

  it('reads a file in chunks into two buffers in turn, each good until the next is asked for', async () => {
    const file = join(dir, 'chunks.pickle');
    writeFileSync(file, bytes);
    const seen: Uint8Array[] = [];
    for await (const chunk of fileChunks(file, 1000)) seen.push(chunk.slice());
    expect(seen.length).toBe(Math.ceil(bytes.length / 1000));
    expect(Buffer.concat(seen)).toEqual(Buffer.from(bytes));
    // Through the pickle reader, over many chunks: what the whole bytes give.
    const read = await streamTraces(fileChunks(file, 777), { name: 'chunks.pickle' });
    expect(read.map(essence)).toEqual(
      (await parseTraces(bytes, { name: 'chunks.pickle' })).map(essence),
    );
    // A reader that stops early closes the file (the prefetched read awaited first).
    for await (const chunk of fileChunks(file, 1000)) {
      expect(chunk.length).toBe(1000);
      break;
    }
  });

  it('ends a damaged or cut stream in a TraceFormatError naming where', async () => {
    const gz = gzipSync(bytes);
    const cut = gz.subarray(0, gz.length >> 1);
    for (const gunzip of [webGunzip, undefined]) {
      const file = join(dir, 'cut.pickle.gz');
      writeFileSync(file, cut);
      const read =
        gunzip === undefined
          ? readTraces(file)
          : streamTraces(chunked(cut, 5, 512), { name: 'cut.pickle.gz', gunzip });
      await expect(read).rejects.toBeInstanceOf(TraceFormatError);
      await expect(read).rejects.toThrow(/cut\.pickle\.gz: byte offset \d+: expected/);
    }
    const plainCut = join(dir, 'cut.pickle');
    writeFileSync(plainCut, bytes.subarray(0, 5000));
    await expect(readTraces(plainCut)).rejects.toThrow(
      /cut\.pickle: byte offset \d+: expected (an opcode \(STOP ends a pickle\)|\d+ more byte\(s\) of operand), found the end of the file/,
    );
  });

  it("says what is wrong with a cut gzip stream in words, not the browser's", async () => {
    const cut = gzipSync(bytes).subarray(0, 200);
    // Chromium's DecompressionStream fails a cut stream when its writer closes, and says so.
    const chromium = (message: string): Gunzip =>
      async function* (chunks) {
        for await (const _chunk of chunks) {
          // the stream takes every chunk, then fails as Chromium's does
        }
        yield* [];
        throw new TypeError(message);
      };
    const cases = [
      [
        "Failed to execute 'close' on 'WritableStreamDefaultWriter': Compressed input was truncated.",
        /cut\.pickle\.gz: byte offset 200: expected a complete, undamaged gzip stream, found the end of the file \(truncated gzip data\)$/,
      ],
      [
        'The compressed data was not valid: invalid block type.',
        /found damaged gzip data \(the compressed data was not valid: invalid block type\)$/,
      ],
    ] as const;
    for (const [message, says] of cases) {
      const read = streamTraces(chunked(cut, 5, 64), {
        name: 'cut.pickle.gz',
        gunzip: (chunks, onError) =>
          (async function* () {
            try {
              yield* chromium(message)(chunks, onError);
            } catch (error) {
              onError(error, 200);
            }
          })(),
      });
      await expect(read).rejects.toThrow(says);
      await expect(read).rejects.not.toThrow(/Failed to execute|WritableStream/);
    }
  });

  it('reads generated snapshots with stacks as unpickle and the reader of plain values do', async () => {
    // PyTorch's layout: frame dicts shared or not, one `frames` list shared between a block of the
    // end state and its `alloc`, and between a free's two entries.
    for (const [seed, sharedFrames, depth] of [
      [1, 1, 8],
      [2, 0.3, 20],
      [3, 0, 70],
    ] as const) {
      const parts: Uint8Array[] = [];
      const chunks = torchSnapshotChunks({ events: 3000, depth, sharedFrames, seed, devices: 2 });
      for (let r = chunks.next(); !r.done; r = chunks.next()) parts.push(r.value.slice());
      const bytes = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
      let at = 0;
      for (const part of parts) {
        bytes.set(part, at);
        at += part.length;
      }
      const reference = parseTorchSnapshot(unpickle(bytes), { name: 'g' }).map(essence);
      const streamed = await streamTraces(chunked(bytes, seed, 5000), { name: 'g' });
      expect(streamed.map(essence)).toEqual(reference);
      expect(streamed.some((trace) => (trace.frames?.size ?? 0) > 0)).toBe(true);
    }
  });

  it('reads other formats whole, within the input limit', async () => {
    const file = join(dir, 'm.trace');
    writeFileSync(file, 'Alloc(64),\nFree(0),\n');
    const [trace] = await readTraces(file);
    expect(trace!.length).toBe(2);
    writeFileSync(file, 'Alloc(64),\n'.repeat(10_000));
    await expect(readTraces(file, { maxBytes: 1024 })).rejects.toThrow(/at most 1 KiB of input/);
  });

  it('refuses bytes whose first MiB names no format without reading the rest', async () => {
    let chunks = 0;
    async function* endless(): AsyncGenerator<Uint8Array> {
      const noise = new Uint8Array(64 * 1024).fill(0x78);
      for (;;) {
        if (++chunks > 64) throw new Error('read past the first MiB');
        yield noise;
      }
    }
    await expect(streamTraces(endless(), { name: 'noise' })).rejects.toThrow(
      /noise:1: expected a PyTorch memory snapshot/,
    );
    expect(chunks).toBe(16);
  });

  const traces = findTracesDir();
  const h100 = traces ? join(traces, 'pytorch-h100', 'infer-default.pickle.gz') : null;
  let present = false;
  try {
    present = h100 !== null && statSync(h100).isFile();
  } catch {
    present = false;
  }
  if (!present) console.warn('snapshot stream: ../shared/traces/pytorch-h100 not found, skipping');
  it.skipIf(!present)(
    'streams the real H100 snapshot to the traces the whole read gives',
    async () => {
      const whole = await parseTraces(readFileSync(h100!), { name: 'infer-default.pickle.gz' });
      const streamed = await readTraces(h100!);
      expect(streamed.map(essence)).toEqual(whole.map(essence));
    },
  );
});
