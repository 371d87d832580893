/**
 * Reads one snapshot dump from disk (Node): the file's bytes in chunks, gzip undone as they come,
 * through the streaming snapshot reader, within the lab's limits for a pickled snapshot. What the
 * file holds that is no snapshot, or is damaged or truncated, is a TraceFormatError naming the file
 * and the byte or entry, as `replay` words it.
 *
 * ```
 *  file ─► 1 MiB chunks ─► gzip? (webGunzip) ─► SnapshotReader ─► records ─► each device's entries
 *  copied ─► snapshotTraces ─► Dump
 * ```
 */
import { createReadStream } from 'node:fs';
import {
  DEFAULT_MAX_SNAPSHOT_EVENTS,
  DEFAULT_MAX_STREAM_BYTES,
  DeviceEntries,
  SnapshotReader,
  snapshotTraces,
  TraceFormatError,
  webGunzip,
} from '@allot/workloads';
import { type Dump, type DumpEntries, dumpOf, entriesOf } from './dump-entries';

/** Bytes read from the file at once. */
const READ_CHUNK = 1 << 20;
/** The first byte of a pickle of protocol 2 or later. */
const PICKLE_PROTO = 0x80;

async function* chunksOf(path: string): AsyncGenerator<Uint8Array> {
  for await (const chunk of createReadStream(path, { highWaterMark: READ_CHUNK })) {
    yield chunk as Buffer;
  }
}

/** Counts the bytes going through, and fails past `most`. */
async function* bounded(
  chunks: AsyncIterable<Uint8Array>,
  name: string,
  most: number,
  what: string,
): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.length;
    if (total > most) {
      throw new TraceFormatError(name, most, `at most ${most} bytes ${what}`, 'more', 'byte');
    }
    yield chunk;
  }
}

/**
 * The dump in the file at `path`, named `name` in errors.
 * @throws TraceFormatError for a file that is no snapshot, damaged, truncated or past a limit
 */
export async function readDump(path: string, name: string): Promise<Dump> {
  const raw = bounded(chunksOf(path), name, DEFAULT_MAX_STREAM_BYTES, 'of input');
  const iterator = raw[Symbol.asyncIterator]();
  const head = await iterator.next();
  const first = head.done ? new Uint8Array(0) : head.value;
  async function* all(): AsyncGenerator<Uint8Array> {
    if (first.length > 0) yield first;
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      yield next.value;
    }
  }
  const gzip = first[0] === 0x1f && first[1] === 0x8b;
  const decoded = gzip
    ? webGunzip(all(), (error, offset) => {
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
    : all();
  const stream = new SnapshotReader({ name, maxEvents: DEFAULT_MAX_SNAPSHOT_EVENTS });
  let checked = false;
  for await (const chunk of bounded(decoded, name, DEFAULT_MAX_STREAM_BYTES, 'after gunzip')) {
    if (!checked && chunk.length > 0) {
      if (chunk[0] !== PICKLE_PROTO) {
        throw new TraceFormatError(
          name,
          0,
          'a pickled PyTorch memory snapshot',
          'other bytes',
          'byte',
        );
      }
      checked = true;
    }
    stream.push(chunk);
    if (stream.complete) break;
  }
  if (!checked) {
    throw new TraceFormatError(
      name,
      0,
      'a pickled PyTorch memory snapshot',
      'an empty file',
      'byte',
    );
  }
  const records = stream.end();
  // The entries as recorded, before snapshotTraces settles their rows into events in place.
  const columns: (DumpEntries | undefined)[] = Array.isArray(records.devices)
    ? records.devices.map((device) =>
        device instanceof DeviceEntries ? entriesOf(device) : undefined,
      )
    : [];
  const traces = snapshotTraces(records, { name, maxEvents: DEFAULT_MAX_SNAPSHOT_EVENTS });
  if (traces.length === 0) {
    throw new TraceFormatError(
      name,
      1,
      'at least one allocation in `device_traces`',
      'empty device traces',
      'event',
    );
  }
  return dumpOf(records, traces, columns);
}
