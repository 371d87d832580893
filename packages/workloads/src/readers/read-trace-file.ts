/**
 * Reading trace files from disk, with the format detected from the content, and finding the shared
 * trace folder (`../shared/traces` beside the repository) without hard-coded paths.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import { parseCsvTrace } from './csv-trace';
import { parseMallocTrace } from './malloc-trace';
import { unpickle } from './pickle';
import { parseRmmLog } from './rmm-log';
import { parseTorchProfilerTrace } from './torch-profiler';
import { parseTorchSnapshot } from './torch-snapshot';

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
  const data = isGzip(bytes) ? gunzipSync(bytes) : bytes;
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
}

function parseJson(text: string, name: string): unknown {
  try {
    return JSON.parse(text);
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
  const name = options.name ?? 'trace';
  const data = isGzip(bytes) ? gunzipSync(bytes) : bytes;
  const format = options.format ?? detectTraceFormatOf(data);
  const text = () => Buffer.from(data.buffer, data.byteOffset, data.length).toString('utf8');
  switch (format) {
    case 'malloc':
      return [parseMallocTrace(text(), { name })];
    case 'csv':
      return [parseCsvTrace(text(), { name })];
    case 'rmm':
      return [parseRmmLog(text(), { name })];
    case 'torch-snapshot': {
      const value = data[0] === PICKLE_PROTO ? unpickle(data, { name }) : parseJson(text(), name);
      const traces = parseTorchSnapshot(value, { name });
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
      return parseTorchProfilerTrace(parseJson(text(), name), { name });
    default: {
      const firstLine =
        text()
          .split('\n')
          .find((line) => line.trim() !== '') ?? '';
      throw new TraceFormatError(name, 1, EXPECTED_FORMATS, JSON.stringify(firstLine.slice(0, 60)));
    }
  }
}

/**
 * Every trace in a file (see {@link parseTraces}).
 *
 * @throws TraceFormatError when the format is unknown or the content is malformed.
 */
export function readTraces(path: string, options: ReadTraceFileOptions = {}): Trace[] {
  return parseTraces(readFileSync(path), { ...options, name: options.name ?? basename(path) });
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
