import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { unpickle } from '@allot/pickle';
import { beforeAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors';
import { summarizeTrace, type Trace } from '../trace';
import { fixtureTrace } from './fixtures/make-fixtures';
import { detectTraceFormatOf, readTraces } from './node-traces';
import { formatRmmLog, parseRmmLog } from './rmm-log';
import { parseTorchSnapshot } from './snapshot-traces';
import { parseTorchProfilerTrace } from './torch-profiler';
import { parseTraces } from './trace-stream';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const fixture = (name: string) => readFileSync(join(fixtures, name));

function errorOf(fn: () => unknown): TraceFormatError {
  try {
    fn();
  } catch (error) {
    if (error instanceof TraceFormatError) return error;
    throw error;
  }
  throw new Error('expected a TraceFormatError');
}

/** The TraceFormatError `read` rejects with. */
async function rejectionOf(read: Promise<unknown>): Promise<TraceFormatError> {
  try {
    await read;
  } catch (error) {
    if (error instanceof TraceFormatError) return error;
    throw error;
  }
  throw new Error('expected a TraceFormatError');
}

/** Sizes in event order, a free written as a negative size: comparable across id schemes. */
function shape(trace: Trace): number[] {
  return Array.from({ length: trace.length }, (_, i) =>
    trace.kind[i] === 0 ? trace.size[i]! : -trace.size[i]!,
  );
}

describe('PyTorch snapshot (JSON)', () => {
  let traces: Trace[] = [];
  beforeAll(async () => {
    traces = await readTraces(join(fixtures, 'snapshot.json'));
  });

  it('gives one trace per device with events, in device order', () => {
    expect(traces.map((t) => t.meta.device)).toEqual([0, 1]);
    expect(traces[0]!.name).toBe('snapshot.json#cuda:0');
  });

  it('replays alloc and free_completed, the first block live from the start', () => {
    const original = fixtureTrace();
    const trace = traces[0]!;
    expect(shape(trace)).toEqual(shape(original));
    expect(trace.meta.preexistingBlocks).toBe(1);
    expect(trace.meta.freeAction).toBe('free_completed');
    expect(summarizeTrace(trace).peakLiveBytes).toBe(summarizeTrace(original).peakLiveBytes);
  });

  it('maps streams to dense ids and reports PyTorch segment decisions', () => {
    const trace = traces[0]!;
    expect(trace.meta.streams).toBe(2);
    expect(trace.stream).toBeDefined();
    expect(Math.max(...trace.stream!)).toBe(1);
    expect(trace.meta.torchSegmentAllocs).toBe(1);
    expect(trace.meta.torchSegmentFrees).toBe(1);
    // 4 MiB at the end = start + 8 MiB allocated − 4 MiB freed  ⇒  start 0, peak 8 MiB.
    expect(trace.meta.torchReservedAtEndBytes).toBe(4 * 2 ** 20);
    expect(trace.meta.torchReservedAtStartBytes).toBe(0);
    expect(trace.meta.torchPeakReservedBytes).toBe(8 * 2 ** 20);
    expect(trace.meta.torchOoms).toBe(1);
    expect(trace.meta.torchAllocConf).toBe('max_split_size_mb:128');
  });

  it('names the device and event of a malformed entry', async () => {
    const action = await rejectionOf(readTraces(join(fixtures, 'snapshot-bad-action.json')));
    expect(action.message).toMatch(/device_traces\[0\]\): event 4: expected an action among/);
    expect(action.found).toBe('"allocate"');
    const addr = await rejectionOf(readTraces(join(fixtures, 'snapshot-bad-addr.json')));
    expect(addr.message).toMatch(/event 3: expected an `addr`/);
    expect(addr.unit).toBe('event');
    const none = await rejectionOf(readTraces(join(fixtures, 'snapshot-no-traces.json')));
    expect(none.message).toMatch(/expected a `device_traces` list/);
  });

  it('rejects an allocation at a live address and a free with no size of an unknown block', () => {
    const twice = {
      device_traces: [
        [
          { action: 'alloc', addr: 4096, size: 512, stream: 0 },
          { action: 'alloc', addr: 4096, size: 512, stream: 0 },
        ],
      ],
    };
    expect(errorOf(() => parseTorchSnapshot(twice)).message).toMatch(
      /event 2: expected an allocation at an address that is not live \(0x1000 was allocated at event 1/,
    );
    const unknown = {
      device_traces: [[{ action: 'free_completed', addr: 4096, size: 0, stream: 0 }]],
    };
    expect(parseTorchSnapshot(unknown)).toEqual([]);
  });

  it('frees at free_requested when a device trace has no free_completed (older PyTorch)', () => {
    const [trace] = parseTorchSnapshot({
      device_traces: [
        [
          { action: 'alloc', addr: 4096, size: 512, stream: 0 },
          { action: 'free_requested', addr: 4096, size: 512, stream: 0 },
          { action: 'alloc', addr: 4096, size: 1024, stream: 0 },
        ],
      ],
    });
    expect(shape(trace!)).toEqual([512, -512, 1024]);
    expect(trace!.meta.freeAction).toBe('free_requested');
  });
});

describe('pickle snapshots', () => {
  it('detects a pickle as a PyTorch snapshot', () => {
    expect(detectTraceFormatOf(new Uint8Array([0x80, 4, 0x7d, 0x2e]))).toBe('torch-snapshot');
  });

  const python = spawnSync('python3', ['--version']);
  const hasPython = python.status === 0;
  if (!hasPython) {
    console.warn('pickle reader: python3 not found, skipping the tests on pickles Python writes');
  }

  it.skipIf(!hasPython)(
    'reads the snapshot dict python3 pickles with protocols 2 to 5 (skipped without python3)',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'allot-pickle-'));
      const snapshotJson = join(fixtures, 'snapshot.json');
      for (const protocol of [2, 3, 4, 5]) {
        const out = join(dir, `snapshot-${protocol}.pickle`);
        // Python rebuilds the dict from the JSON fixture, adds Python-only shapes (a tuple pool id,
        // a float, None, a big int) and pickles it as torch.cuda.memory._dump_snapshot does.
        execFileSync('python3', [
          '-c',
          [
            'import json, pickle, sys',
            'd = json.load(open(sys.argv[1]))',
            "d['segments'][0]['segment_pool_id'] = (0, 0)",
            "d['allocator_settings']['garbage_collection_threshold'] = 0.0",
            "d['allocator_settings']['last_allocator_settings'] = None",
            "d['allocator_settings']['big'] = 2**70",
            "pickle.dump(d, open(sys.argv[2], 'wb'), protocol=int(sys.argv[3]))",
          ].join('\n'),
          snapshotJson,
          out,
          String(protocol),
        ]);
        const bytes = readFileSync(out);
        expect(detectTraceFormatOf(bytes)).toBe('torch-snapshot');
        const value = unpickle(bytes) as Record<string, Record<string, unknown>>;
        expect(value.allocator_settings!.big).toBe(2n ** 70n);
        expect(value.allocator_settings!.last_allocator_settings).toBeNull();
        const fromPickle = await readTraces(out);
        const fromJson = await readTraces(snapshotJson, { name: `snapshot-${protocol}.pickle` });
        expect(fromPickle.map(shape), `protocol ${protocol}`).toEqual(fromJson.map(shape));
        expect(fromPickle[0]!.meta).toEqual(fromJson[0]!.meta);
      }
    },
  );
});

describe('PyTorch profiler trace', () => {
  it('replays [memory] events per device in timestamp order: CUDA only, unless asked', async () => {
    const traces = await readTraces(join(fixtures, 'profiler.json'));
    expect(traces.map((t) => t.meta.device)).toEqual(['cuda:0']);
    const all = parseTorchProfilerTrace(JSON.parse(fixture('profiler.json').toString('utf8')), {
      allDevices: true,
    });
    expect(all.map((t) => t.meta.device)).toEqual(['cuda:0', 'cpu:-1']);
    expect(shape(all[1]!)).toEqual([64, -64]);
    expect(traces[0]!.meta.torchPeakReservedBytes).toBe(3 * 2 ** 21);
  });

  it('treats an AMD GPU (Device Type 6, HIP on ROCm) as the caching allocator’s, as CUDA', () => {
    const memory = (ts: number, bytes: number, type: number, id: number, reserved: number) => ({
      name: '[memory]',
      ph: 'i',
      ts,
      args: {
        Addr: 2 ** 30 + (type === 0 ? 0 : 2 ** 20),
        Bytes: bytes,
        'Total Allocated': bytes > 0 ? 2 ** 24 + bytes : 2 ** 24,
        'Total Reserved': reserved,
        'Device Type': type,
        'Device Id': id,
      },
    });
    const json = {
      deviceProperties: [{ id: 0, name: 'AMD Instinct MI300X', totalGlobalMem: 192 * 2 ** 30 }],
      traceEvents: [
        memory(1, 4096, 6, 0, 2 ** 25),
        memory(2, 64, 0, -1, 0),
        memory(3, -4096, 6, 0, 2 ** 25),
        memory(4, -64, 0, -1, 0),
      ],
    };
    const traces = parseTorchProfilerTrace(json, { name: 'mi300' });
    expect(traces.map((t) => t.meta.device)).toEqual(['hip:0']);
    expect(traces[0]!.meta.startState).toBe('estimated');
    expect(traces[0]!.meta.deviceMemoryBytes).toBe(192 * 2 ** 30);
    const all = parseTorchProfilerTrace(json, { name: 'mi300', allDevices: true });
    expect(all.map((t) => t.meta.device)).toEqual(['hip:0', 'cpu:-1']);
  });

  it('names a memory-timeline export for what it is, and what to record instead', async () => {
    const rows = [
      [-1, 1, 37888, 7],
      [-1, 1, 512, 7],
      [1_700_000, 2, -512, 7],
    ];
    const error = await rejectionOf(
      parseTraces(new TextEncoder().encode(JSON.stringify(rows)), { name: 'timeline.raw' }),
    );
    expect(error).toBeInstanceOf(TraceFormatError);
    expect(error.message).toMatch(
      /timeline\.raw: event 1: expected a profiler trace or a memory snapshot; this is the raw output of export_memory_timeline\(\).*record a snapshot with torch\.cuda\.memory\._record_memory_history\(\)/,
    );
  });

  it('carries each event’s ts (µs) and Total Reserved', async () => {
    const [trace] = await readTraces(join(fixtures, 'profiler.json'));
    const time = [...trace!.time!];
    const leading = trace!.length - time.filter((_, i) => i > 0).length - 1;
    expect(time.every((t, i) => i === 0 || t >= time[i - 1]!)).toBe(true);
    expect(time[trace!.length - 1]! - time[0]!).toBe(trace!.meta.durationUs);
    expect(leading).toBeGreaterThanOrEqual(0);
    expect(Math.max(...trace!.recordedReserved!)).toBe(trace!.meta.torchPeakReservedBytes);
    expect(trace!.recordedReserved![0]).toBe(trace!.meta.torchReservedAtStartBytes);
  });

  it('reads the gzipped form and a bare event list', async () => {
    const raw = fixture('profiler.json');
    const gz = await parseTraces(gzipSync(raw), { name: 'p.json.gz' });
    expect(shape(gz[0]!)).toEqual(shape(fixtureTrace()));
    const list = JSON.parse(raw.toString('utf8')).traceEvents;
    expect(parseTorchProfilerTrace(list).length).toBe(1);
    expect(parseTorchProfilerTrace(list, { allDevices: true }).length).toBe(2);
  });

  it('names the event of a malformed [memory] event, and says when there is none', async () => {
    const bad = await rejectionOf(readTraces(join(fixtures, 'profiler-bad-bytes.json')));
    expect(bad.message).toMatch(/event 6: expected an integer `Bytes` \(negative for a free\)/);
    const none = await rejectionOf(readTraces(join(fixtures, 'profiler-no-memory.json')));
    expect(none.message).toMatch(/expected `\[memory\]` events.*profile_memory=True/);
  });

  it('reports invalid JSON with a line', async () => {
    const error = await rejectionOf(parseTraces(Buffer.from('{"traceEvents": [\n{"name": }]}')));
    expect(error.message).toMatch(/expected valid JSON/);
  });
});

describe('RMM log', () => {
  it('round-trips a generated trace', async () => {
    const original = fixtureTrace();
    const trace = parseRmmLog(formatRmmLog(original), { name: 'rmm.csv' });
    expect(shape(trace)).toEqual(shape(original));
    expect((await readTraces(join(fixtures, 'rmm.csv')))[0]!.meta.format).toBe('rmm');
  });

  it('models a free of an unknown pointer as live from the start and skips failures', () => {
    const text = [
      'Thread,Time,Action,Pointer,Size,Stream',
      '1,t,allocate,0x100,64,0x0',
      '1,t,free,0x900,32,0x0',
      '1,t,allocate failure,0x0,99999,0x0',
      '2,t,allocate,0x200,16,0x7f01',
    ].join('\n');
    const trace = parseRmmLog(text);
    expect(shape(trace)).toEqual([32, 64, -32, 16]);
    expect(trace.meta).toMatchObject({ preexistingBlocks: 1, failedInLog: 1, streams: 2 });
  });

  it('names the line of a bad header, size or action', async () => {
    expect((await rejectionOf(readTraces(join(fixtures, 'rmm-bad-header.csv')))).message).toMatch(
      /rmm-bad-header\.csv:1: expected the header `Thread,Time,Action,Pointer,Size,Stream`/,
    );
    expect((await rejectionOf(readTraces(join(fixtures, 'rmm-bad-size.csv')))).message).toMatch(
      /rmm-bad-size\.csv:5: expected a positive integer Size/,
    );
    expect((await rejectionOf(readTraces(join(fixtures, 'rmm-bad-action.csv')))).message).toMatch(
      /rmm-bad-action\.csv:3: expected Action `allocate`, `free` or `allocate failure`/,
    );
  });

  it('is detected by its header', async () => {
    expect(detectTraceFormatOf(fixture('rmm.csv'))).toBe('rmm');
    const dir = mkdtempSync(join(tmpdir(), 'allot-rmm-'));
    writeFileSync(join(dir, 'log.csv.gz'), gzipSync(fixture('rmm.csv')));
    expect((await readTraces(join(dir, 'log.csv.gz')))[0]!.meta.format).toBe('rmm');
  });
});
