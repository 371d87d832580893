import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors';
import { randomMix } from '../generators/random-mix';
import { summarizeTrace, type Trace, TraceBuilder } from '../trace';
import { formatCsvTrace, parseCsvTrace } from './csv-trace';
import { formatMallocTrace, parseMallocTrace } from './malloc-trace';
import { findTracesDir, readTraces } from './node-traces';
import { detectTraceFormat } from './parse-traces';

/** The one trace in the file at `path`. */
async function readOne(path: string): Promise<Trace> {
  const traces = await readTraces(path);
  expect(traces).toHaveLength(1);
  return traces[0]!;
}

function events(trace: Trace): string[] {
  return Array.from(
    { length: trace.length },
    (_, i) => `${trace.kind[i]}:${trace.id[i]}:${trace.size[i]}:${trace.alignment[i]}`,
  );
}

function errorOf(fn: () => unknown): TraceFormatError {
  try {
    fn();
  } catch (error) {
    if (error instanceof TraceFormatError) return error;
    throw error;
  }
  throw new Error('expected a TraceFormatError');
}

describe('malloc trace', () => {
  it('reads the format, with blank lines and an optional trailing comma', () => {
    const trace = parseMallocTrace('Alloc(552),\nAlloc(120),\n\n  Free(0),\nAlloc(7)\nFree(2),\n', {
      name: 'fixture.trace',
    });
    expect(trace.name).toBe('fixture.trace');
    expect(events(trace)).toEqual(['0:0:552:0', '0:1:120:0', '1:0:552:0', '0:2:7:0', '1:2:7:0']);
  });

  it('maps Alloc(0) to a 1-byte request so later frees still match', () => {
    const trace = parseMallocTrace('Alloc(0),\nAlloc(5),\nFree(0),\n');
    expect(Array.from(trace.size)).toEqual([1, 5, 1]);
    expect(trace.meta.zeroSizeAllocs).toBe(1);
  });

  it('round-trips a generated trace', () => {
    const original = randomMix({ liveBlocks: 50, operations: 500, seed: 9 });
    const parsed = parseMallocTrace(formatMallocTrace(original));
    expect(events(parsed)).toEqual(events(original));
  });

  it('names the line and what was expected on malformed input', () => {
    const bad = errorOf(() => parseMallocTrace('Alloc(1),\nAllocate(5),\n', { name: 'x.trace' }));
    expect(bad.line).toBe(2);
    expect(bad.message).toMatch(/^x\.trace:2: expected `Alloc\(<bytes>\),` or `Free\(<index>\),`/);
    expect(errorOf(() => parseMallocTrace('Alloc(-1),')).line).toBe(1);
    expect(errorOf(() => parseMallocTrace('Alloc(99999999999999999999),')).expected).toMatch(
      /2\^53/,
    );
    const early = errorOf(() => parseMallocTrace('Alloc(1),\nFree(3),\n'));
    expect(early.line).toBe(2);
    expect(early.found).toMatch(/not allocated yet/);
    const twice = errorOf(() => parseMallocTrace('Alloc(1),\nFree(0),\nFree(0),\n'));
    expect(twice.line).toBe(3);
    expect(twice.found).toMatch(/already freed/);
  });
});

describe('CSV trace', () => {
  it('reads ids of any kind, reused after free, with optional header and alignment', () => {
    const text = [
      '# recorded by hand',
      'op,id,size,alignment',
      'alloc,0x7f00,4096,256',
      'alloc,b,100',
      'FREE,0x7f00',
      'alloc,0x7f00,64,0',
      'free,b,100',
      '',
    ].join('\n');
    const trace = parseCsvTrace(text);
    expect(events(trace)).toEqual([
      '0:0:4096:256',
      '0:1:100:0',
      '1:0:4096:0',
      '0:2:64:0',
      '1:1:100:0',
    ]);
  });

  it('round-trips a generated trace, with and without alignment', () => {
    const original = randomMix({ liveBlocks: 40, operations: 300, seed: 4 });
    expect(events(parseCsvTrace(formatCsvTrace(original)))).toEqual(events(original));
    const builder = new TraceBuilder();
    builder.free(builder.alloc(10, 512));
    const aligned = builder.build('aligned');
    expect(formatCsvTrace(aligned)).toBe('op,id,size,alignment\nalloc,0,10,512\nfree,0\n');
    expect(events(parseCsvTrace(formatCsvTrace(aligned)))).toEqual(events(aligned));
  });

  it('names the line and what was expected on malformed input', () => {
    const cases: [string, number, RegExp][] = [
      ['op,id,size\nalloc,1,0\n', 2, /positive integer size/],
      ['alloc,1,12x\n', 1, /positive integer size/],
      ['alloc,1,8,3\n', 1, /power of two/],
      ['alloc,1,8\nalloc,1,8\n', 2, /freed/],
      ['alloc,1,8\nfree,2\n', 2, /live block/],
      ['grow,1,8\n', 1, /op `alloc` or `free`/],
      ['alloc\n', 1, /2 to 4 fields/],
      ['alloc,,8\n', 1, /non-empty id/],
    ];
    for (const [text, line, expected] of cases) {
      const error = errorOf(() => parseCsvTrace(text, { name: 'in.csv' }));
      expect(error.line, text).toBe(line);
      expect(error.message, text).toMatch(expected);
      expect(error.message.startsWith(`in.csv:${line}: expected`)).toBe(true);
    }
  });
});

describe('files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'allot-workloads-'));

  it('detects the format and reads plain and gzipped files', async () => {
    const trace = randomMix({ liveBlocks: 20, operations: 100 });
    writeFileSync(join(dir, 'mix.trace'), formatMallocTrace(trace));
    writeFileSync(join(dir, 'mix.csv.gz'), gzipSync(formatCsvTrace(trace)));
    const fromMalloc = await readOne(join(dir, 'mix.trace'));
    const fromCsv = await readOne(join(dir, 'mix.csv.gz'));
    expect(fromMalloc.name).toBe('mix.trace');
    expect(events(fromMalloc)).toEqual(events(trace));
    expect(events(fromCsv)).toEqual(events(trace));
    expect(detectTraceFormat('\n# c\nop,id,size\n')).toBe('csv');
    expect(detectTraceFormat('Free(1),')).toBe('malloc');
    expect(detectTraceFormat('{"traceEvents": []}')).toBeNull();
  });

  it('says which formats it knows when it recognises none', async () => {
    writeFileSync(join(dir, 'x.json'), '{"a": 1}\n');
    await expect(readTraces(join(dir, 'x.json'))).rejects.toThrow(
      /x\.json:1: expected .*a malloc trace/,
    );
  });

  it('finds ../shared/traces beside the workspace root, or returns null', () => {
    const root = join(dir, 'repo');
    mkdirSync(join(root, 'apps', 'bench'), { recursive: true });
    writeFileSync(join(root, 'pnpm-workspace.yaml'), 'packages: []\n');
    expect(findTracesDir({ from: join(root, 'apps', 'bench'), env: {} })).toBeNull();
    mkdirSync(join(dir, 'shared', 'traces'), { recursive: true });
    expect(findTracesDir({ from: join(root, 'apps', 'bench'), env: {} })).toBe(
      join(dir, 'shared', 'traces'),
    );
    expect(findTracesDir({ env: { ALLOT_TRACES_DIR: join(dir, 'shared') } })).toBe(
      join(dir, 'shared'),
    );
    expect(findTracesDir({ env: { ALLOT_TRACES_DIR: join(dir, 'missing') } })).toBeNull();
  });
});

describe('the shared malloc traces', () => {
  const tracesDir = findTracesDir();
  it.skipIf(tracesDir === null)('all parse, with the peaks the folder README states', async () => {
    const file = (name: string) => join(tracesDir!, 'malloc-real-programs', name);
    // grep-random-data has two Alloc(0) lines (read as 1 byte each); neither is live at its peak.
    expect(summarizeTrace(await readOne(file('gcc-hello.trace'))).peakLiveBytes).toBe(9_303_005);
    expect(summarizeTrace(await readOne(file('ffmpeg.trace'))).allocs).toBe(1832);
    expect(summarizeTrace(await readOne(file('grep-random-data.trace'))).peakLiveBytes).toBe(
      53_926,
    );
  });
});
