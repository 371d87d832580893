/**
 * Parsing a trace's bytes, once decompressed and whole, in any JavaScript runtime (no Node module):
 * format detection, the input limits, and the readers of the formats read whole (text and JSON).
 * Bytes come here through `trace-stream.ts`, which reads a pickled snapshot itself, as it streams.
 */
import { DEFAULT_MACHINE_LIMITS, type MachineLimits } from '@allot/pickle';
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import { DEFAULT_MAX_EVENTS } from '../trace';
import { parseCsvTrace } from './csv-trace';
import { parseMallocTrace } from './malloc-trace';
import { parseRmmLog } from './rmm-log';
import { parseTorchSnapshot } from './snapshot-traces';
import { parseTorchProfilerTrace } from './torch-profiler';

const utf8 = new TextDecoder('utf-8');

/** The first byte of a pickle of protocol 2 or later. */
export const PICKLE_PROTO = 0x80;

/** Most characters a JavaScript string holds (V8's limit, about 2^29). */
const MAX_STRING_LENGTH = 2 ** 29 - 24;

/**
 * Most bytes of input a reader takes unless told otherwise: of a file, and of its content after
 * decompression. With {@link DEFAULT_MAX_EVENTS} it keeps reading a hostile file within about
 * 1 GB of memory; real traces are smaller (the largest in `../shared/traces` is 38 MB unpacked).
 */
export const DEFAULT_MAX_INPUT_BYTES = 128 * 1024 * 1024;

/**
 * Most bytes a pickled snapshot may have, compressed or not, unless told otherwise. It is read in
 * one streaming pass that keeps only what the replay uses (see {@link SnapshotReader}), so memory
 * follows what it keeps, bounded by the pickle reader's own limits, not the file's length.
 */
export const DEFAULT_MAX_STREAM_BYTES = 16 * 1024 * 1024 * 1024;

/**
 * Most events per trace of a pickled snapshot unless told otherwise: its entries cost 37 bytes each
 * while read, and about a hundred more while the trace is built, so 8 M keep a replay near 1 GB
 * (a 1 GB snapshot with 60-deep stacks holds about 2.4 M; torchtitan records 1 M per rank).
 */
export const DEFAULT_MAX_SNAPSHOT_EVENTS = 8_000_000;

/** How much of a file's start decides its format (and, when nothing matches, fails fast). */
export const DETECT_BYTES = 1024 * 1024;

/** At most one JSON object or array per this many bytes of the input limit (bounds JSON.parse). */
const JSON_BYTES_PER_CONTAINER = 64;

/**
 * Trace formats this package reads: `malloc` and `csv` (text, one event per line), `rmm` (RMM's
 * `logging_resource_adaptor` CSV), `torch-snapshot` (a PyTorch memory snapshot, pickled or as JSON)
 * and `torch-profiler` (a Chrome trace with `[memory]` events).
 */
export type TraceFormat = 'malloc' | 'csv' | 'rmm' | 'torch-snapshot' | 'torch-profiler';

/** Every {@link TraceFormat}, for help texts and option checks. */
export const TRACE_FORMATS: readonly TraceFormat[] = [
  'malloc',
  'csv',
  'rmm',
  'torch-snapshot',
  'torch-profiler',
];

export const EXPECTED_FORMATS =
  'a PyTorch memory snapshot (pickle or JSON), a PyTorch profiler trace (Chrome JSON), an RMM log ' +
  '(`Thread,Time,Action,Pointer,Size,Stream`), a malloc trace (`Alloc(n),` / `Free(k),`) or a CSV ' +
  'trace (`op,id,size[,alignment]`)';

/**
 * Guesses a text format from the first meaningful line: `Alloc(`/`Free(` is a malloc trace; RMM's
 * header (`Thread,Time,Action,...`) an RMM log; a line with commas whose first field is `op`,
 * `alloc` or `free` is CSV. Returns `null` otherwise (see {@link detectTraceFormatOf} for binary and
 * JSON formats).
 */
export function detectTraceFormat(text: string): TraceFormat | null {
  for (const raw of text.split('\n', 64)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (/^(Alloc|Free)\(/.test(line)) return 'malloc';
    const first = line.split(',')[0]!.trim().toLowerCase();
    if (/^thread\s*,\s*time\s*,\s*action\b/i.test(line)) return 'rmm';
    if (line.includes(',') && (first === 'op' || first === 'alloc' || first === 'free'))
      return 'csv';
    return null;
  }
  return null;
}

export function firstNonSpace(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length && i < 4096; i++) {
    const b = bytes[i]!;
    if (
      b !== 0x20 &&
      b !== 0x0a &&
      b !== 0x0d &&
      b !== 0x09 &&
      b !== 0xef &&
      b !== 0xbb &&
      b !== 0xbf
    )
      return b;
  }
  return -1;
}

/** Options of every reader of traces: `streamTraces` and its adapters. */
export interface ReadTraceFileOptions {
  /** Skip detection and read this format. */
  readonly format?: TraceFormat;
  /** Trace name. @defaultValue the file's base name */
  readonly name?: string;
  /**
   * Most bytes of the file, and of its content after decompression. The limits on JSON values and
   * on what a pickle may hold scale with it. @defaultValue {@link DEFAULT_MAX_INPUT_BYTES}, and
   * {@link DEFAULT_MAX_STREAM_BYTES} for a pickled snapshot read as a stream
   */
  readonly maxBytes?: number;
  /** Most events per trace. @defaultValue {@link DEFAULT_MAX_EVENTS} */
  readonly maxEvents?: number;
  /** Profiler traces: every device, not only the CUDA ones. @defaultValue false */
  readonly allDevices?: boolean;
}

function formatLimit(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1 && value % 1024 === 0) {
    value /= 1024;
    unit++;
  }
  return `${value.toLocaleString('en-US')} ${units[unit]}`;
}

export function inputLimitError(
  name: string,
  offset: number,
  maxBytes: number,
  what: string,
): never {
  throw new TraceFormatError(
    name,
    offset,
    `at most ${formatLimit(maxBytes)} ${what} (the input limit)`,
    'more',
    'byte',
  );
}

export function unknownFormat(name: string, data: Uint8Array): never {
  const head = utf8.decode(data.subarray(0, 4096));
  const firstLine = head.split('\n').find((line) => line.trim() !== '') ?? '';
  throw new TraceFormatError(name, 1, EXPECTED_FORMATS, JSON.stringify(firstLine.slice(0, 60)));
}

/** Objects and arrays a JSON text may hold at most, counted (over-counted) as `{` and `[` bytes. */
function checkJsonSize(data: Uint8Array, name: string, maxBytes: number): void {
  const most = Math.max(1024, Math.floor(maxBytes / JSON_BYTES_PER_CONTAINER));
  let count = 0;
  for (let i = 0; i < data.length; i++) {
    const b = data[i]!;
    if ((b === 0x7b || b === 0x5b) && ++count > most) {
      throw new TraceFormatError(
        name,
        i,
        `at most ${most.toLocaleString('en-US')} JSON objects and arrays (the input limit)`,
        'more',
        'byte',
      );
    }
  }
}

function parseJson(text: string, name: string): unknown {
  try {
    // JSON.parse refuses a byte-order mark; editors on Windows write one.
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (error) {
    const message = (error as Error).message;
    const position = /position (\d+)/.exec(message);
    const offset = position ? Number(position[1]) : 0;
    const line = text.slice(0, offset).split('\n').length;
    throw new TraceFormatError(name, line, 'valid JSON', message);
  }
}

/**
 * Guesses the format of decompressed bytes: a pickle (`0x80` protocol opcode) is a PyTorch
 * snapshot; JSON is a snapshot when it names `device_traces` or `segments`, else a profiler trace
 * when it names `traceEvents` or is a list; text goes to {@link detectTraceFormat}. Returns `null`
 * when nothing matches.
 */
export function detectDecompressedFormat(bytes: Uint8Array): TraceFormat | null {
  const data = bytes.subarray(0, DETECT_BYTES);
  if (data[0] === PICKLE_PROTO) return 'torch-snapshot';
  const first = firstNonSpace(data);
  if (first === 0x7b || first === 0x5b) {
    const head = utf8.decode(data);
    if (/"(device_traces|segments)"\s*:/.test(head)) return 'torch-snapshot';
    if (/"traceEvents"\s*:/.test(head) || first === 0x5b) return 'torch-profiler';
    return null;
  }
  return detectTraceFormat(utf8.decode(data));
}

/**
 * The pickle reader's limits under input limit `maxBytes`: the defaults, scaled down when a limit
 * below {@link DEFAULT_MAX_INPUT_BYTES} was asked for.
 */
export function machineLimits(maxBytes: number | undefined): MachineLimits {
  const scale = Math.min(1, (maxBytes ?? DEFAULT_MAX_INPUT_BYTES) / DEFAULT_MAX_INPUT_BYTES);
  if (scale === 1) return DEFAULT_MACHINE_LIMITS;
  const bytes = maxBytes ?? DEFAULT_MAX_INPUT_BYTES;
  return {
    ...DEFAULT_MACHINE_LIMITS,
    maxItems: Math.ceil(DEFAULT_MACHINE_LIMITS.maxItems * scale),
    // One memo entry per 16 bytes allowed: more than a real snapshot makes (about one per 60).
    maxMemo: Math.ceil(bytes / 16),
    maxMemoStringBytes: Math.ceil(DEFAULT_MACHINE_LIMITS.maxMemoStringBytes * scale),
  };
}

/** Fails when a snapshot's traces hold no allocation. */
export function requireSnapshotTraces(traces: Trace[], name: string): Trace[] {
  if (traces.length === 0) {
    throw new TraceFormatError(
      name,
      1,
      'at least one allocation in `device_traces` (record with ' +
        'torch.cuda.memory._record_memory_history() before the code you want to trace)',
      'empty device traces',
      'event',
    );
  }
  return traces;
}

/** Fails when no trace holds an event. */
export function requireEvents(traces: Trace[], name: string): Trace[] {
  if (traces.every((trace) => trace.length === 0)) {
    throw new TraceFormatError(
      name,
      1,
      'at least one allocation (the file holds no events: a header alone, or nothing)',
      'no events',
      'event',
    );
  }
  return traces;
}

/**
 * Every trace in decompressed bytes `data`, which are no pickle: one for the text formats, one per
 * device for PyTorch snapshots (as JSON) and profiler traces.
 *
 * @throws TraceFormatError when the format is unknown or the content is malformed.
 */
export function parseWhole(data: Uint8Array, options: ReadTraceFileOptions = {}): Trace[] {
  const name = options.name ?? 'trace';
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
  const format = options.format ?? detectDecompressedFormat(data);
  const text = () => {
    if (data.length > MAX_STRING_LENGTH) {
      inputLimitError(
        name,
        MAX_STRING_LENGTH,
        MAX_STRING_LENGTH,
        'of text (the most a JavaScript string holds)',
      );
    }
    return utf8.decode(data);
  };
  const json = () => {
    checkJsonSize(data, name, maxBytes);
    return parseJson(text(), name);
  };
  switch (format) {
    case 'malloc':
      return requireEvents([parseMallocTrace(text(), { name, maxEvents })], name);
    case 'csv':
      return requireEvents([parseCsvTrace(text(), { name, maxEvents })], name);
    case 'rmm':
      return requireEvents([parseRmmLog(text(), { name, maxEvents })], name);
    case 'torch-snapshot':
      return requireSnapshotTraces(parseTorchSnapshot(json(), { name, maxEvents }), name);
    case 'torch-profiler':
      return requireEvents(
        parseTorchProfilerTrace(json(), {
          name,
          maxEvents,
          ...(options.allDevices ? { allDevices: true } : {}),
        }),
        name,
      );
    default:
      return unknownFormat(name, data);
  }
}
