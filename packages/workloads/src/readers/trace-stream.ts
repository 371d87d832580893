/**
 * Traces from a stream of bytes, in any JavaScript runtime: a Node file stream, a browser `File`'s
 * `stream()`, a fetch body. Gzip is undone as the bytes come (`DecompressionStream` unless the
 * caller brings its own inflater), and a pickled snapshot goes through {@link SnapshotReader} chunk
 * by chunk, so a file of gigabytes is never whole in memory. Other formats are read whole.
 *
 * ```
 *  chunks ─► counted (bytesRead, the input limit) ─► gunzip? ─► first bytes decide:
 *              pickle ─► SnapshotReader.push(chunk) … end() ─► snapshotTraces()
 *              other  ─► readWhole(), or the chunks joined ─► parseDecompressed()
 * ```
 */
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import {
  DEFAULT_MAX_INPUT_BYTES,
  DEFAULT_MAX_SNAPSHOT_EVENTS,
  DEFAULT_MAX_STREAM_BYTES,
  inputLimitError,
  machineLimits,
  PICKLE_PROTO,
  parseDecompressed,
  type ReadTraceFileOptions,
  requireSnapshotTraces,
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

/** Options of {@link streamTraces}. */
export interface StreamTracesOptions extends ReadTraceFileOptions {
  /** The input's length, for progress. */
  readonly totalBytes?: number | null;
  /** Called after each chunk, and once at the end. */
  readonly onProgress?: (progress: ReadProgress) => void;
  /** The gzip inflater. @defaultValue one over `DecompressionStream` */
  readonly gunzip?: Gunzip;
  /** Reads an input that is no pickle whole, once its first bytes say so. @defaultValue joins the chunks (within the input limit) */
  readonly readWhole?: () => Trace[] | Promise<Trace[]>;
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * Every trace in the bytes `chunks` yields (see the module comment).
 *
 * @throws TraceFormatError when the format is unknown, the content is malformed or past a limit.
 */
export async function streamTraces(
  chunks: AsyncIterable<Uint8Array>,
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
  const source = chunks[Symbol.asyncIterator]();
  async function* counted(first: Uint8Array): AsyncGenerator<Uint8Array> {
    yield first;
    for (;;) {
      const next = await source.next();
      if (next.done) return;
      bytesRead += next.value.length;
      if (bytesRead > maxStream) inputLimitError(name, maxStream, maxStream, 'of input');
      yield next.value;
    }
  }
  try {
    const head = await source.next();
    if (head.done) return parseDecompressed(new Uint8Array(0), { ...options, name });
    const first = head.value;
    bytesRead = first.length;
    const gzip = first[0] === GZIP_MAGIC[0] && first[1] === GZIP_MAGIC[1];
    const inflate = options.gunzip ?? webGunzip;
    const decoded = gzip
      ? inflate(counted(first), (error, offset) => {
          throw error instanceof TraceFormatError
            ? error
            : new TraceFormatError(
                name,
                offset,
                'a complete, undamaged gzip stream',
                `damaged gzip data (${(error as Error).message})`,
                'byte',
              );
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
        if (options.readWhole !== undefined) return await options.readWhole();
        return parseDecompressed(await joinAll(data, iterator, options.maxBytes, name), {
          ...options,
          name,
        });
      }
      const maxEvents = options.maxEvents ?? DEFAULT_MAX_SNAPSHOT_EVENTS;
      let stream: SnapshotReader | null = new SnapshotReader({
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
        stream.push(chunk);
        entries = stream.entries;
        report(false);
        if (stream.complete) break;
        const next = await iterator.next();
        chunk = next.done ? null : next.value;
      }
      const records = stream.end();
      // The pickle machine (its memo above all) is garbage from here, while the traces are built.
      stream = null;
      const traces = snapshotTraces(records, { name, maxEvents });
      report(true);
      return requireSnapshotTraces(traces, name);
    } finally {
      await iterator.return?.();
    }
  } finally {
    await source.return?.();
  }
}

/** The rest of a stream joined after `first`, within the input limit. */
async function joinAll(
  first: Uint8Array,
  rest: AsyncIterator<Uint8Array>,
  maxBytes: number | undefined,
  name: string,
): Promise<Uint8Array> {
  const most = maxBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const parts = [first];
  let total = first.length;
  for (;;) {
    if (total > most) inputLimitError(name, most, most, 'of input');
    const next = await rest.next();
    if (next.done) break;
    parts.push(next.value);
    total += next.value.length;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A {@link Gunzip} over the web platform's `DecompressionStream` (browsers, Node 18 and later). */
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
    await feed;
  } finally {
    reader.releaseLock();
  }
};
