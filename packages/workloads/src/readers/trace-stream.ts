/**
 * The one way bytes become traces, in any JavaScript runtime: {@link streamTraces} reads a stream
 * of bytes (a browser `File`'s `stream()`, a fetch body, a Node file's chunks), and thin adapters
 * give it a buffer ({@link parseTraces}), a browser `File` or any `Blob` ({@link readBlobTraces})
 * and, in `@allot/workloads/node`, a path (`readTraces`). Gzip is undone as the bytes come
 * (`DecompressionStream` unless the caller brings its own inflater), and a pickled snapshot goes
 * through {@link SnapshotReader} chunk by chunk, so a file of gigabytes is never whole in memory.
 * Other formats are read whole, within the input limit, once their first bytes name one.
 *
 * ```
 *  chunks ─► counted (bytesRead, the input limit) ─► gunzip? ─► first bytes decide:
 *              pickle ─► SnapshotReader.push(chunk) … end() ─► snapshotTraces()
 *              other  ─► a format named in the first MiB, or fail ─► joined ─► parseWhole()
 * ```
 */
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import {
  DEFAULT_MAX_INPUT_BYTES,
  DEFAULT_MAX_SNAPSHOT_EVENTS,
  DEFAULT_MAX_STREAM_BYTES,
  DETECT_BYTES,
  detectDecompressedFormat,
  inputLimitError,
  machineLimits,
  PICKLE_PROTO,
  parseWhole,
  type ReadTraceFileOptions,
  requireSnapshotTraces,
  unknownFormat,
} from './parse-traces';
import { SnapshotReader } from './snapshot-reader';
import { snapshotTraces } from './snapshot-traces';

/** How far a streamed read is. */
export interface ReadProgress {
  /** Bytes of the input read (compressed bytes, for a gzip file). */
  readonly bytesRead: number;
  /** The input's length, when known. */
  readonly totalBytes: number | null;
  /** Bytes after decompression. */
  readonly bytesDecoded: number;
  /** Trace entries read so far (pickled snapshots). */
  readonly events: number;
  /** Whether the read is over. */
  readonly done: boolean;
}

/** Inflates gzip chunks; a damaged stream goes to `onError`, which throws. */
export type Gunzip = (
  chunks: AsyncIterable<Uint8Array>,
  onError: (error: unknown, offset: number) => never,
) => AsyncIterable<Uint8Array>;

/**
 * What {@link streamTraces} reads: chunks of bytes, each good until the next is asked for (a
 * reader may hand out one buffer again and again), as an async or plain iterable or a web stream.
 */
export type TraceSource =
  | AsyncIterable<Uint8Array>
  | Iterable<Uint8Array>
  | ReadableStream<Uint8Array>;

/** Options of {@link streamTraces}. */
export interface StreamTracesOptions extends ReadTraceFileOptions {
  /** The input's length, for progress. */
  readonly totalBytes?: number | null;
  /** Called after each chunk, and once at the end. */
  readonly onProgress?: (progress: ReadProgress) => void;
  /** The gzip inflater. @defaultValue one over `DecompressionStream` */
  readonly gunzip?: Gunzip;
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/** The browser's words for its own call that failed (`Failed to execute 'close' on '…': `). */
const CALL_PREFIX = /^Failed to execute '[^']*' on '[^']*':\s*/;

/**
 * What an inflater's error means for the file, as a TraceFormatError at `offset` (the compressed
 * bytes read): a stream cut short, or damaged data in the inflater's own words, without the names
 * of the browser's stream calls that carried it.
 */
function gzipStreamError(error: unknown, name: string, offset: number): TraceFormatError {
  const raw = error instanceof Error ? error.message : String(error);
  const message = raw.replace(CALL_PREFIX, '').replace(/\.$/, '');
  const truncated = /truncated|unexpected end/i.test(message);
  return new TraceFormatError(
    name,
    offset,
    'a complete, undamaged gzip stream',
    truncated
      ? 'the end of the file (truncated gzip data)'
      : `damaged gzip data (${message.charAt(0).toLowerCase()}${message.slice(1)})`,
    'byte',
  );
}

/** `source`'s chunks as an async iterator. */
async function* chunksOf(source: TraceSource): AsyncGenerator<Uint8Array> {
  if (!(typeof ReadableStream === 'function' && source instanceof ReadableStream)) {
    yield* source as AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
    return;
  }
  const reader = source.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Every trace in the bytes `source` yields (see the module comment): one for the text formats,
 * one per device for PyTorch snapshots and profiler traces.
 *
 * @throws TraceFormatError when the format is unknown, the content is malformed or past a limit.
 */
export async function streamTraces(
  source: TraceSource,
  options: StreamTracesOptions = {},
): Promise<Trace[]> {
  const name = options.name ?? 'trace';
  const maxStream = options.maxBytes ?? DEFAULT_MAX_STREAM_BYTES;
  const totalBytes = options.totalBytes ?? null;
  let bytesRead = 0;
  let bytesDecoded = 0;
  let entries = 0;
  const report = (done: boolean) =>
    options.onProgress?.({ bytesRead, totalBytes, bytesDecoded, events: entries, done });
  const chunks = chunksOf(source);
  async function* counted(first: Uint8Array): AsyncGenerator<Uint8Array> {
    yield first;
    for (;;) {
      const next = await chunks.next();
      if (next.done) return;
      bytesRead += next.value.length;
      if (bytesRead > maxStream) inputLimitError(name, maxStream, maxStream, 'of input');
      yield next.value;
    }
  }
  try {
    const head = await chunks.next();
    if (head.done) return parseWhole(new Uint8Array(0), { ...options, name });
    const first = head.value;
    bytesRead = first.length;
    const gzip = first[0] === GZIP_MAGIC[0] && first[1] === GZIP_MAGIC[1];
    const inflate = options.gunzip ?? webGunzip;
    const decoded = gzip
      ? inflate(counted(first), (error, offset) => {
          throw error instanceof TraceFormatError ? error : gzipStreamError(error, name, offset);
        })
      : counted(first);
    const iterator = decoded[Symbol.asyncIterator]();
    try {
      const firstDecoded = await iterator.next();
      const data = firstDecoded.done ? new Uint8Array(0) : firstDecoded.value;
      const pickled =
        data[0] === PICKLE_PROTO &&
        (options.format === undefined || options.format === 'torch-snapshot');
      if (!pickled) {
        const whole = await readWhole(data, iterator, options, name, gzip);
        const traces = parseWhole(whole, { ...options, name });
        bytesDecoded = whole.length;
        report(true);
        return traces;
      }
      const maxEvents = options.maxEvents ?? DEFAULT_MAX_SNAPSHOT_EVENTS;
      let reader: SnapshotReader | null = new SnapshotReader({
        name,
        maxEvents,
        limits: machineLimits(options.maxBytes),
      });
      let chunk: Uint8Array | null = data;
      while (chunk !== null) {
        bytesDecoded += chunk.length;
        if (bytesDecoded > maxStream) {
          inputLimitError(name, maxStream, maxStream, 'of data after decompression');
        }
        reader.push(chunk);
        entries = reader.entries;
        report(false);
        if (reader.complete) break;
        const next = await iterator.next();
        chunk = next.done ? null : next.value;
      }
      const records = reader.end();
      // The pickle machine (its memo above all) is garbage from here, while the traces are built.
      reader = null;
      const traces = snapshotTraces(records, { name, maxEvents });
      report(true);
      return requireSnapshotTraces(traces, name);
    } finally {
      await iterator.return?.();
    }
  } finally {
    await chunks.return(undefined);
  }
}

/** Every trace in `bytes` (gzipped or not): {@link streamTraces} of one chunk. */
export function parseTraces(
  bytes: Uint8Array,
  options: StreamTracesOptions = {},
): Promise<Trace[]> {
  return streamTraces([bytes], { totalBytes: bytes.length, ...options });
}

/**
 * Every trace in a browser `File` (or any `Blob`), read as a stream: {@link streamTraces} named
 * after the file, with its length for progress.
 */
export function readBlobTraces(
  blob: Blob & { readonly name?: string },
  options: StreamTracesOptions = {},
): Promise<Trace[]> {
  return streamTraces(blob.stream(), {
    ...(blob.name !== undefined ? { name: blob.name } : {}),
    totalBytes: blob.size,
    ...options,
  });
}

/**
 * An input that is no pickle, whole: its first bytes (the first MiB decides) must name a format,
 * and the whole within the input limit. Chunks are copied: a reader may reuse their buffer.
 */
async function readWhole(
  first: Uint8Array,
  rest: AsyncIterator<Uint8Array>,
  options: ReadTraceFileOptions,
  name: string,
  gzip: boolean,
): Promise<Uint8Array> {
  const most = options.maxBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const what = gzip ? 'of data after decompression' : 'of input';
  const parts = [first.slice()];
  let total = first.length;
  let decided = options.format !== undefined;
  for (;;) {
    if (total > most) inputLimitError(name, most, most, what);
    if (!decided && total >= DETECT_BYTES) {
      const head = join(parts, total).subarray(0, DETECT_BYTES);
      if (detectDecompressedFormat(head) === null) unknownFormat(name, head);
      decided = true;
    }
    const next = await rest.next();
    if (next.done) break;
    parts.push(next.value.slice());
    total += next.value.length;
  }
  return join(parts, total);
}

/** `parts` joined, `total` bytes (the one part when there is only one). */
function join(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  parts.length = 0;
  parts.push(out);
  return out;
}

export const webGunzip: Gunzip = async function* (chunks, onError) {
  const inflate = new DecompressionStream('gzip');
  const writer = inflate.writable.getWriter();
  let offset = 0;
  const feed = (async () => {
    for await (const chunk of chunks) {
      offset += chunk.length;
      await writer.write(chunk as Uint8Array<ArrayBuffer>);
    }
    await writer.close();
  })();
  feed.catch(() => undefined);
  const reader = inflate.readable.getReader();
  try {
    for (;;) {
      let next: { done: boolean; value?: Uint8Array };
      try {
        next = await reader.read();
      } catch (error) {
        await feed.catch((fed) => {
          if (fed instanceof TraceFormatError) throw fed;
        });
        return onError(error, offset);
      }
      if (next.done || next.value === undefined) break;
      yield next.value;
    }
    try {
      await feed;
    } catch (error) {
      if (error instanceof TraceFormatError) throw error;
      return onError(error, offset);
    }
  } finally {
    reader.releaseLock();
  }
};
