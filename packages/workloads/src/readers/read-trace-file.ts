/**
 * Reading trace files from disk (Node): whole files for the text and JSON formats, a pickled
 * snapshot as a stream (see {@link readTracesStreaming}), gzip undone with `node:zlib`; and finding
 * the shared trace folder (`../shared/traces` beside the repository) without hard-coded paths.
 * The parsing itself is in `parse-traces.ts` and `trace-stream.ts`, which any runtime can run.
 */
import {
  closeSync,
  createReadStream,
  existsSync,
  fstatSync,
  openSync,
  readSync,
  statSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGunzip, gunzipSync, constants as zlibConstants } from 'node:zlib';
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import {
  DEFAULT_MAX_INPUT_BYTES,
  DETECT_BYTES,
  detectDecompressedFormat,
  inputLimitError,
  parseDecompressed,
  type ReadTraceFileOptions,
  type TraceFormat,
  unknownFormat,
} from './parse-traces';
import { type ReadProgress, streamTraces } from './trace-stream';

export {
  DEFAULT_MAX_INPUT_BYTES,
  DEFAULT_MAX_SNAPSHOT_EVENTS,
  DEFAULT_MAX_STREAM_BYTES,
  detectTraceFormat,
  type ReadTraceFileOptions,
  TRACE_FORMATS,
  type TraceFormat,
} from './parse-traces';
export type { ReadProgress } from './trace-stream';

const GZIP_MAGIC = [0x1f, 0x8b] as const;
/**
 * Bytes a streamed read takes at once, from the file and out of gunzip. The reader's work per
 * chunk (an await, the carried-over tail, the progress report) is paid 16 times per MiB at 64 KiB:
 * on a 263 MB snapshot, 64 KiB chunks cost about 0.3 s more of a 2.4 s run.
 */
const READ_CHUNK = 1 << 20;

function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
}

/**
 * Guesses the format of a file's bytes (gunzipped first when they start with gzip's magic): see
 * `detectDecompressedFormat`. Returns `null` when nothing matches.
 */
export function detectTraceFormatOf(bytes: Uint8Array): TraceFormat | null {
  const whole = isGzip(bytes) ? gunzipHead(bytes) : bytes;
  return whole === null ? null : detectDecompressedFormat(whole);
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

/** What a zlib error means, as a TraceFormatError at `offset` (the compressed bytes read). */
function gzipError(error: unknown, name: string, offset: number): TraceFormatError {
  const message = (error as Error).message;
  const truncated = /unexpected end of file/i.test(message);
  const check = /incorrect (data|length) check/i.test(message);
  return new TraceFormatError(
    name,
    truncated ? offset : check ? Math.max(0, offset - 8) : 0,
    'a complete, undamaged gzip stream',
    truncated ? 'the end of the file (truncated gzip data)' : `damaged gzip data (${message})`,
    'byte',
  );
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
    throw gzipError(error, name, bytes.length);
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
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_INPUT_BYTES;
  if (bytes.length > maxBytes) inputLimitError(name, maxBytes, maxBytes, 'of input');
  const gzip = isGzip(bytes);
  if (gzip && options.format === undefined && detectTraceFormatOf(bytes) === null) {
    unknownFormat(name, gunzipHead(bytes) ?? gunzip(bytes, name, maxBytes));
  }
  const data = gzip ? gunzip(bytes, name, maxBytes) : bytes;
  return parseDecompressed(data, { ...options, name });
}

/** Options of {@link readTracesStreaming}. */
export interface ReadTracesStreamingOptions extends ReadTraceFileOptions {
  /** Called as the file is read (about every MiB of it, and once at the end). */
  readonly onProgress?: (progress: ReadProgress) => void;
}

/**
 * Every trace in a file, a pickled snapshot (gzipped or not) read in one streaming pass: memory
 * follows what the replay keeps, not the file's length, and `onProgress` hears how far it is. Other
 * formats are read whole, as {@link readTraces} does.
 *
 * @throws TraceFormatError when the format is unknown or the content is malformed.
 */
export async function readTracesStreaming(
  path: string,
  options: ReadTracesStreamingOptions = {},
): Promise<Trace[]> {
  const name = options.name ?? basename(path);
  const stat = statSync(path);
  const totalBytes = stat.isFile() ? stat.size : null;
  // gzip holds what it is given while it inflates: it gets a stream's own chunks.
  const chunks =
    stat.isFile() && !startsWithGzip(path)
      ? fileChunks(path)
      : createReadStream(path, { highWaterMark: READ_CHUNK });
  return streamTraces(chunks, {
    ...options,
    name,
    totalBytes,
    gunzip: (chunks, onError) =>
      nodeGunzip(chunks, (error, offset) => onError(gzipError(error, name, offset), offset)),
    readWhole: () => readTraces(path, { ...options, name }),
  });
}

/** Whether the file at `path` begins with gzip's magic bytes. */
function startsWithGzip(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = new Uint8Array(2);
    const n = readSync(fd, head, 0, 2, 0);
    return n === 2 && head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
  } finally {
    closeSync(fd);
  }
}

/**
 * The file at `path` in chunks of `size` bytes, read into two buffers in turn, the next read
 * under way while the caller works on the last: no new buffer (and no garbage) a chunk. A chunk is
 * good until the next is asked for, which suits the pickle reader: it takes each chunk whole, and
 * copies the few bytes it carries over.
 */
export async function* fileChunks(path: string, size = READ_CHUNK): AsyncGenerator<Uint8Array> {
  const handle = await open(path, 'r');
  const buffers = [new Uint8Array(size), new Uint8Array(size)];
  let which = 0;
  let pending = handle.read(buffers[0]!, 0, size, null);
  try {
    for (;;) {
      const { bytesRead } = await pending;
      if (bytesRead === 0) return;
      const current = buffers[which]!;
      which ^= 1;
      pending = handle.read(buffers[which]!, 0, size, null);
      yield current.subarray(0, bytesRead);
    }
  } finally {
    await pending.catch(() => undefined);
    await handle.close();
  }
}

/** Inflates gzip `chunks` with `node:zlib`, as they come. */
async function* nodeGunzip(
  chunks: AsyncIterable<Uint8Array>,
  onError: (error: unknown, offset: number) => never,
): AsyncGenerator<Uint8Array> {
  const inflate = createGunzip({ chunkSize: READ_CHUNK });
  let offset = 0;
  const feed = (async () => {
    try {
      for await (const chunk of chunks) {
        offset += chunk.length;
        if (!inflate.write(chunk)) {
          await new Promise<void>((resolve) => {
            const go = () => {
              inflate.off('drain', go);
              inflate.off('close', go);
              resolve();
            };
            inflate.on('drain', go);
            inflate.on('close', go);
          });
        }
        if (inflate.destroyed) return;
      }
      inflate.end();
    } catch (error) {
      inflate.destroy(error as Error);
    }
  })();
  try {
    for await (const out of inflate) yield out as Uint8Array;
  } catch (error) {
    if (error instanceof TraceFormatError) throw error;
    if (
      (error as NodeJS.ErrnoException).code?.startsWith('Z_') ||
      /gzip|header|check|end of file/i.test((error as Error).message)
    ) {
      onError(error, offset);
    }
    throw error;
  } finally {
    inflate.destroy();
    await feed.catch(() => undefined);
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
