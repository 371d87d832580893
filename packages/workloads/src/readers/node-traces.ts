/**
 * The Node edge of trace reading: a file's chunks, read into two buffers in turn, or gunzipped with
 * `node:zlib` as they come, given to `streamTraces` ({@link readTraces}); the format of a file's
 * first bytes, gzipped or not; and the shared trace folder (`../shared/traces` beside the
 * repository), found without hard-coded paths. The reading itself is `trace-stream.ts`'s, which
 * any runtime can run.
 */
import { closeSync, createReadStream, existsSync, openSync, readSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGunzip, gunzipSync, constants as zlibConstants } from 'node:zlib';
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import {
  DETECT_BYTES,
  detectDecompressedFormat,
  type ReadTraceFileOptions,
  type TraceFormat,
} from './parse-traces';
import { type ReadProgress, streamTraces } from './trace-stream';

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

/** Options of {@link readTraces}. */
export interface ReadTracesOptions extends ReadTraceFileOptions {
  /** Called as the file is read (about every MiB of it, and once at the end). */
  readonly onProgress?: (progress: ReadProgress) => void;
}

/**
 * Every trace in the file at `path` (gzipped or not), read as `streamTraces` reads a stream: a
 * pickled snapshot in one pass, memory following what the replay keeps, not the file's length;
 * other formats whole, within the input limit. `onProgress` hears how far it is.
 *
 * @throws TraceFormatError when the format is unknown or the content is malformed; a file-system
 * error when the file cannot be read.
 */
export async function readTraces(path: string, options: ReadTracesOptions = {}): Promise<Trace[]> {
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
