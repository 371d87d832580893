/**
 * A fuzz target for every reader: for arbitrary bytes, plain and gzipped, read as each format (and
 * with the format detected), `parseTraces` ends in traces or in a typed `TraceFormatError`, never
 * in another exception, within a time bound and without holding more than a bounded amount of
 * memory. Besides raw bytes, the inputs include mutations of a small valid file of each format
 * and sequences of pickle opcodes, so that the fuzzer reaches past the first line.
 *
 * Runs: FC_NUM_RUNS per property (default 40, 2,000 under `pnpm fuzz`); the seed is fixed (FC_SEED
 * overrides it, FC_PATH replays a failure) so the default test run is the same every time.
 */
import { gzipSync } from 'node:zlib';
import { PickleError, type PickleValue, pickle, unpickle } from '@allot/pickle';
import { assertYielding } from '@allot/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors';
import { TRACE_FORMATS, type TraceFormat } from './parse-traces';
import { pickles } from './pickle-test-support';
import { parseTraces } from './trace-stream';

const fuzzing = process.env.ALLOT_FUZZ === '1';
const parameters: fc.Parameters<unknown> = {
  numRuns: Number(process.env.FC_NUM_RUNS ?? (fuzzing ? 2000 : 40)),
  seed: Number(process.env.FC_SEED ?? 20_261_123),
  ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
};

/** Limits small enough that any input stays cheap, large enough for every seed file. */
const LIMITS = { maxBytes: 1 << 20, maxEvents: 100_000 } as const;
/** Most milliseconds one read may take. */
const TIME_BOUND_MS = 2_000;
/** Most bytes of heap one read may leave behind or hold (a multiple of the input limit). */
const HEAP_BOUND = 64 * LIMITS.maxBytes;

const SEEDS: Readonly<Record<TraceFormat, string | Uint8Array>> = {
  malloc: 'Alloc(64),\nAlloc(128),\nFree(0),\nFree(1),\n',
  csv: 'op,id,size,alignment\nalloc,a,64,8\nalloc,b,128\nfree,a\nfree,b\n',
  rmm: 'Thread,Time,Action,Pointer,Size,Stream\n1,0.1,allocate,0x1000,64,0x0\n1,0.2,free,0x1000,64,0x0\n',
  'torch-profiler':
    '{"traceEvents":[{"name":"[memory]","ph":"i","ts":1,"args":{"Addr":4096,"Bytes":512,"Device Type":1,"Device Id":0}},' +
    '{"name":"[memory]","ph":"i","ts":2,"args":{"Addr":4096,"Bytes":-512,"Device Type":1,"Device Id":0}}]}',
  'torch-snapshot':
    '{"segments":[],"device_traces":[[{"action":"alloc","addr":4096,"size":512,"stream":0},' +
    '{"action":"free_completed","addr":4096,"size":512,"stream":0}]]}',
};

function bytesOf(value: string | Uint8Array): Uint8Array {
  return typeof value === 'string' ? new TextEncoder().encode(value) : value;
}

/** Reads `bytes`; fails the property on anything but traces or a TraceFormatError. */
async function readsSafely(bytes: Uint8Array, format: TraceFormat | undefined): Promise<void> {
  const heapBefore = process.memoryUsage().heapUsed;
  const start = performance.now();
  try {
    const traces = await parseTraces(bytes, {
      name: 'fuzz',
      ...LIMITS,
      ...(format ? { format } : {}),
    });
    for (const trace of traces) expect(trace.length).toBeLessThanOrEqual(LIMITS.maxEvents);
  } catch (error) {
    if (!(error instanceof TraceFormatError)) throw error;
    expect(error.message.length).toBeLessThan(2000);
  }
  expect(performance.now() - start).toBeLessThan(TIME_BOUND_MS);
  expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(HEAP_BOUND);
}

/** A seed file with bytes replaced, inserted and cut at random places. */
function mutated(seed: Uint8Array): fc.Arbitrary<Uint8Array> {
  const edit = fc.record({
    at: fc.nat(),
    kind: fc.constantFrom('replace', 'insert', 'delete', 'repeat'),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
  });
  return fc.array(edit, { maxLength: 6 }).map((edits) => {
    let out = Array.from(seed);
    for (const { at, kind, bytes } of edits) {
      const i = out.length === 0 ? 0 : at % out.length;
      if (kind === 'replace') out.splice(i, bytes.length, ...bytes);
      else if (kind === 'insert') out.splice(i, 0, ...bytes);
      else if (kind === 'delete') out.splice(i, bytes.length);
      else out = out.concat(out.slice(i, i + 64 * bytes[0]!));
    }
    return Uint8Array.from(out);
  });
}

const formats: (TraceFormat | undefined)[] = [undefined, ...TRACE_FORMATS];

describe.each(formats.map((format) => [format ?? 'detected', format] as const))(
  'reading as %s',
  (_, format) => {
    it('arbitrary bytes end in traces or a TraceFormatError', async () => {
      await assertYielding(
        fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), fc.boolean(), async (bytes, gzip) => {
          await readsSafely(gzip ? gzipSync(bytes) : bytes, format);
        }),
        parameters,
      );
    });

    it('mutated files of every format end in traces or a TraceFormatError', async () => {
      const seeds = fc.constantFrom(...Object.values(SEEDS).map(bytesOf));
      await assertYielding(
        fc.asyncProperty(seeds.chain(mutated), fc.boolean(), async (bytes, gzip) => {
          await readsSafely(gzip ? gzipSync(bytes) : bytes, format);
        }),
        parameters,
      );
    });

    it('damaged gzip streams end in a TraceFormatError', async () => {
      const seeds = fc.constantFrom(...Object.values(SEEDS).map((seed) => gzipSync(bytesOf(seed))));
      await assertYielding(
        fc.asyncProperty(seeds.chain(mutated), (bytes) => readsSafely(bytes, format)),
        parameters,
      );
    });
  },
);

/**
 * Snapshots whose memo repeats what the reader expands: a list of trace entries, a dict holding it,
 * a segment of blocks, or a frames list shared by many blocks, placed again and again, nested.
 */
const repeatingSnapshots = fc
  .record({
    entries: fc.integer({ min: 1, max: 300 }),
    repeats: fc.integer({ min: 2, max: 3000 }),
    nesting: fc.integer({ min: 0, max: 2 }),
    holder: fc.constantFrom('list', 'dict', 'segment', 'frames'),
  })
  .map(({ entries, repeats, nesting, holder }) => {
    const frames = Array.from({ length: 8 }, (_, line) => ({ filename: 'f.py', line, name: 'g' }));
    const trace = Array.from({ length: entries }, (_, i) => ({
      action: i % 2 === 0 ? 'alloc' : 'free_completed',
      addr: 4096 * (1 + (i >> 1)),
      size: 512,
      frames,
    }));
    const blocks = trace.map((entry) => ({ address: entry.addr, size: 512, frames }));
    const unit =
      holder === 'list'
        ? trace
        : holder === 'dict'
          ? { trace }
          : holder === 'segment'
            ? { device: 0, address: 4096, total_size: 2 ** 21, blocks }
            : { address: 4096, frames };
    let repeated: PickleValue = unit;
    for (let level = 0; level <= nesting; level++) repeated = new Array(repeats).fill(repeated);
    return holder === 'list'
      ? pickle({ device_traces: repeated })
      : pickle({ segments: repeated, device_traces: [trace] });
  });

describe('the snapshot reader', () => {
  it('bounds what memo repeats expand to: traces or a TraceFormatError, within bounds', async () => {
    await assertYielding(
      fc.asyncProperty(repeatingSnapshots, fc.boolean(), async (bytes, gzip) => {
        await readsSafely(gzip ? gzipSync(bytes) : bytes, undefined);
      }),
      parameters,
    );
  });
});

describe('the pickle reader', () => {
  it('opcode sequences end in a value, a TraceFormatError or, read alone, a PickleError', async () => {
    await assertYielding(
      fc.asyncProperty(pickles, fc.boolean(), async (bytes, gzip) => {
        await readsSafely(gzip ? gzipSync(bytes) : bytes, undefined);
        try {
          unpickle(bytes, { limits: { maxItems: 10_000, maxExpandedSize: 100_000 } });
        } catch (error) {
          if (!(error instanceof PickleError)) throw error;
        }
      }),
      parameters,
    );
  });
});
