/**
 * Reading trace files from disk, with the format detected from the content, and finding the shared
 * trace folder (`../shared/traces` beside the repository) without hard-coded paths.
 */
import { constants as bufferConstants } from 'node:buffer';
import { closeSync, existsSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, constants as zlibConstants } from 'node:zlib';
import { TraceFormatError } from '../errors';
import { DEFAULT_MAX_EVENTS, type Trace } from '../trace';
import { parseCsvTrace } from './csv-trace';
import { parseMallocTrace } from './malloc-trace';
import { DEFAULT_UNPICKLE_LIMITS, type UnpickleLimits, unpickle } from './pickle';
import { parseRmmLog } from './rmm-log';
import { parseTorchProfilerTrace } from './torch-profiler';
import { parseTorchSnapshot } from './torch-snapshot';

/**
 * Most bytes of input a reader takes unless told otherwise: of a file, and of its content after
 * decompression. With {@link DEFAULT_MAX_EVENTS} it keeps reading a hostile file within about
 * 1 GB of memory; real traces are smaller (the largest in `../shared/traces` is 38 MB unpacked).
 */
export const DEFAULT_MAX_INPUT_BYTES = 128 * 1024 * 1024;

/** How much of a file's start decides its format (and, when nothing matches, fails fast). */
const DETECT_BYTES = 1024 * 1024;

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

const EXPECTED_FORMATS =
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

const GZIP_MAGIC = [0x1f, 0x8b] as const;
const PICKLE_PROTO = 0x80;

function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
}

function firstNonSpace(bytes: Uint8Array): number {
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

/**
 * Guesses the format of a file's bytes (gunzipped first when they start with gzip's magic): a pickle
 * (`0x80` protocol opcode) is a PyTorch snapshot; JSON is a snapshot when it names `device_traces`
 * or `segments`, else a profiler trace when it names `traceEvents` or is a list; text goes to
 * {@link detectTraceFormat}. Returns `null` when nothing matches.
 */
export function detectTraceFormatOf(bytes: Uint8Array): TraceFormat | null {
  const whole = isGzip(bytes) ? gunzipHead(bytes) : bytes;
  if (whole === null) return null;
  const data = whole.subarray(0, DETECT_BYTES);
  if (data[0] === PICKLE_PROTO) return 'torch-snapshot';
  const first = firstNonSpace(data);
  if (first === 0x7b || first === 0x5b) {
    const head = Buffer.from(data.buffer, data.byteOffset, Math.min(data.length, 1 << 20)).toString(
      'utf8',
    );
    if (/"(device_traces|segments)"\s*:/.test(head)) return 'torch-snapshot';
    if (/"traceEvents"\s*:/.test(head) || first === 0x5b) return 'torch-profiler';
    return null;
  }
  return detectTraceFormat(Buffer.from(data.buffer, data.byteOffset, data.length).toString('utf8'));
}

/** Options of {@link readTraceFile}, {@link readTraces} and {@link parseTraces}. */
export interface ReadTraceFileOptions {
  /** Skip detection and read this format. */
  readonly format?: TraceFormat;
  /** Trace name. @defaultValue the file's base name */
  readonly name?: string;
  /**
   * Most bytes of the file, and of its content after decompression. The limits on JSON values and
   * on what a pickle may build scale with it. @defaultValue {@link DEFAULT_MAX_INPUT_BYTES}
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

function inputLimitError(name: string, offset: number, maxBytes: number, what: string): never {
  throw new TraceFormatError(
    name,
    offset,
    `at most ${formatLimit(maxBytes)} ${what} (the input limit)`,
    'more',
    'byte',
  );
}

/**
 * The start of a gzip stream's content, for detection: a prefix of the compressed bytes inflated
 * without its end, capped, so a small file that inflates to gigabytes costs a few MiB here.
 */
function gunzipHead(bytes: Uint8Array): Uint8Array | null {
  for (const prefix of [64 * 1024, 8 * 1024, 1024]) {
    try {
      return gunzipSync(bytes.subarray(0, prefix), {
        finishFlush: zlibConstants.Z_SYNC_FLUSH,
        maxOutputLength: 2 * DETECT_BYTES,
      });
    } catch {
      // Too much output for this prefix (try a shorter one), or corrupt from the start.
    }
  }
  return null;
}

/** The whole content of a gzip stream, within `maxBytes`; a damaged stream is a TraceFormatError. */
function gunzip(bytes: Uint8Array, name: string, maxBytes: number): Uint8Array {
  try {
    return gunzipSync(bytes, { maxOutputLength: Math.max(1, maxBytes) });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) {
      return inputLimitError(name, bytes.length, maxBytes, 'of data after decompression');
    }
    const message = (error as Error).message;
    const truncated = /unexpected end of file/i.test(message);
    const check = /incorrect (data|length) check/i.test(message);
    throw new TraceFormatError(
      name,
      truncated ? bytes.length : check ? Math.max(0, bytes.length - 8) : 0,
      'a complete, undamaged gzip stream',
      truncated ? 'the end of the file (truncated gzip data)' : `damaged gzip data (${message})`,
      'byte',
    );
  }
}

function unknownFormat(name: string, data: Uint8Array): never {
  const head = Buffer.from(data.buffer, data.byteOffset, Math.min(data.length, 4096)).toString(
    'utf8',
  );
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
 * Every trace in a file's bytes: one for the text formats, one per device for PyTorch snapshots and
 * profiler traces. Gzip-compressed input is recognised by its magic bytes.
 *
 * @throws TraceFormatError when the format is unknown or the content is malformed.
 */
export function parseTraces(bytes: Uint8Array, options: ReadTraceFileOptions = {}): Trace[] {
  const traces = parseAll(bytes, options);
  if (traces.every((trace) => trace.length === 0)) {
    throw new TraceFormatError(
      options.name ?? 'trace',
      1,
      'at least one allocation (the file holds no events: a header alone, or nothing)',
      'no events',
      'event',
    );
  }
  return traces;
}

function parseAll(bytes: Uint8Array, options: ReadTraceFileOptions): Trace[] {
  const name = options.name ?? 'trace';
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
  if (bytes.length > maxBytes) inputLimitError(name, maxBytes, maxBytes, 'of input');
  const gzip = isGzip(bytes);
  if (gzip && options.format === undefined && detectTraceFormatOf(bytes) === null) {
    unknownFormat(name, gunzipHead(bytes) ?? gunzip(bytes, name, maxBytes));
  }
  const data = gzip ? gunzip(bytes, name, maxBytes) : bytes;
  const format = options.format ?? detectTraceFormatOf(data);
  const text = () => {
    if (data.length > bufferConstants.MAX_STRING_LENGTH) {
      inputLimitError(
        name,
        bufferConstants.MAX_STRING_LENGTH,
        bufferConstants.MAX_STRING_LENGTH,
        'of text (the most a JavaScript string holds)',
      );
    }
    return Buffer.from(data.buffer, data.byteOffset, data.length).toString('utf8');
  };
  const json = () => {
    checkJsonSize(data, name, maxBytes);
    return parseJson(text(), name);
  };
  const scale = maxBytes / DEFAULT_MAX_INPUT_BYTES;
  const limits: Partial<UnpickleLimits> = {
    maxContainers: Math.ceil(DEFAULT_UNPICKLE_LIMITS.maxContainers * scale),
    maxItems: Math.ceil(DEFAULT_UNPICKLE_LIMITS.maxItems * scale),
    maxExpandedSize: Math.ceil(DEFAULT_UNPICKLE_LIMITS.maxExpandedSize * scale),
  };
  switch (format) {
    case 'malloc':
      return [parseMallocTrace(text(), { name, maxEvents })];
    case 'csv':
      return [parseCsvTrace(text(), { name, maxEvents })];
    case 'rmm':
      return [parseRmmLog(text(), { name, maxEvents })];
    case 'torch-snapshot': {
      const value = data[0] === PICKLE_PROTO ? unpickle(data, { name, limits }) : json();
      const traces = parseTorchSnapshot(value, { name, maxEvents });
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
    case 'torch-profiler':
      return parseTorchProfilerTrace(json(), {
        name,
        maxEvents,
        ...(options.allDevices ? { allDevices: true } : {}),
      });
    default:
      return unknownFormat(name, data);
  }
}

/**
 * The bytes of a file, read in chunks and never more than `maxBytes` (a device such as `/dev/zero`
 * never ends); when the format is to be detected, the first chunk decides, so a file that is no
 * trace fails before the rest is read.
 */
function readInput(path: string, name: string, options: ReadTraceFileOptions): Uint8Array {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const fd = openSync(path, 'r');
  try {
    const stat = fstatSync(fd);
    if (stat.isFile() && stat.size > maxBytes)
      inputLimitError(name, maxBytes, maxBytes, 'of input');
    const chunkSize = stat.isFile() ? Math.max(stat.size + 1, 4096) : DETECT_BYTES;
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const want = Math.min(chunkSize, maxBytes + 1 - total);
      const chunk = Buffer.allocUnsafe(want);
      const n = readSync(fd, chunk, 0, want, null);
      if (n === 0) break;
      chunks.push(n < want ? chunk.subarray(0, n) : chunk);
      total += n;
      if (total > maxBytes) inputLimitError(name, maxBytes, maxBytes, 'of input');
      if (chunks.length === 1 && options.format === undefined && total >= DETECT_BYTES) {
        if (detectTraceFormatOf(chunks[0]!) === null) {
          unknownFormat(
            name,
            isGzip(chunks[0]!) ? (gunzipHead(chunks[0]!) ?? chunks[0]!) : chunks[0]!,
          );
        }
      }
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

/**
 * Every trace in a file (see {@link parseTraces}).
 *
 * @throws TraceFormatError when the format is unknown or the content is malformed.
 */
export function readTraces(path: string, options: ReadTraceFileOptions = {}): Trace[] {
  const name = options.name ?? basename(path);
  return parseTraces(readInput(path, name, options), { ...options, name });
}

/**
 * Reads a trace file, detecting its format (gzip-compressed input is recognised by its magic
 * bytes). For a file that holds several traces (one per device), the one with the most events.
 *
 * @throws TraceFormatError when the format is unknown or the content is malformed.
 */
export function readTraceFile(path: string, options: ReadTraceFileOptions = {}): Trace {
  const traces = readTraces(path, options);
  return traces.reduce((best, trace) => (trace.length > best.length ? trace : best));
}

/** Environment variable that points at the shared trace folder, overriding the search. */
export const TRACES_DIR_ENV = 'ALLOT_TRACES_DIR';

/** Options of {@link findTracesDir}. */
export interface FindTracesDirOptions {
  /** Where to start walking up. @defaultValue process.cwd(), then this module's folder */
  readonly from?: string;
  /** Environment to read {@link TRACES_DIR_ENV} from. @defaultValue process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function moduleDirectory(): string | null {
  try {
    return dirname(fileURLToPath(import.meta.url));
  } catch {
    return null;
  }
}

/**
 * The shared trace folder: `$ALLOT_TRACES_DIR` when set, else `../shared/traces` beside the
 * repository root, the first folder above `from` (then above this module) that holds
 * `pnpm-workspace.yaml`. Returns `null` when there is none, so callers can skip with a message.
 */
export function findTracesDir(options: FindTracesDirOptions = {}): string | null {
  const env = options.env ?? process.env;
  const override = env[TRACES_DIR_ENV];
  if (override) return isDirectory(override) ? resolve(override) : null;
  const starts = options.from ? [options.from] : [process.cwd(), moduleDirectory()];
  for (const start of starts) {
    if (!start) continue;
    let dir = resolve(start);
    for (;;) {
      if (existsSync(join(dir, 'pnpm-workspace.yaml'))) {
        const candidate = resolve(dir, '..', 'shared', 'traces');
        if (isDirectory(candidate)) return candidate;
        break;
      }
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return null;
}
