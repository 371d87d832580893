/**
 * Big PyTorch snapshot files on disk, for the snapshot commands (`snapshot-gen`, `snapshot-read`):
 * a generated snapshot written chunk by chunk (gzipped on the way when asked), a real snapshot read
 * as a base, and the sizes people type (`250MB`, `1GiB`).
 */
import { once } from 'node:events';
import { closeSync, createWriteStream, openSync, readFileSync, writeSync } from 'node:fs';
import { createGzip, gunzipSync } from 'node:zlib';
import { DEFAULT_UNPICKLE_LIMITS, type UnpickledValue, unpickle } from '@allot/pickle';
import {
  type TorchSnapshotOptions,
  type TorchSnapshotSummary,
  torchSnapshotChunks,
} from '@allot/workloads';

/** What a written snapshot file holds, and how long it took. */
export interface SnapshotFile extends TorchSnapshotSummary {
  readonly path: string;
  /** Bytes on disk (the pickle's, or the gzip's). */
  readonly fileBytes: number;
  readonly gzip: boolean;
  readonly seconds: number;
}

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
};

/** Bytes from `1000000`, `40MB` (10^6), `1.5GB` (10^9) or `256MiB` (2^20); null if not a size. */
export function parseByteSize(text: string): number | null {
  const match = /^(\d+(?:\.\d+)?)([a-z]*)$/i.exec(text.trim());
  const unit = match === null ? undefined : UNITS[match[2]!.toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Math.round(Number(match![1]) * unit);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : null;
}

/** `38.8 MB`, `1.02 GB`: decimal units, as file sizes are usually quoted. */
export function formatMegabytes(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** A snapshot pickle (gzipped or not) read into memory, as the base of a generated one. */
export function readBaseSnapshot(path: string): UnpickledValue {
  let bytes: Uint8Array = readFileSync(path);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  // The default limits suit 128 MiB; a bigger base gets room in proportion.
  const scale = Math.max(1, bytes.length / 2 ** 27);
  const limits = {
    maxItems: Math.ceil(DEFAULT_UNPICKLE_LIMITS.maxItems * scale),
    maxExpandedSize: Math.ceil(DEFAULT_UNPICKLE_LIMITS.maxExpandedSize * scale),
  };
  return unpickle(bytes, { name: path, limits });
}

function writeAll(fd: number, chunk: Uint8Array): number {
  for (let at = 0; at < chunk.length; ) at += writeSync(fd, chunk, at);
  return chunk.length;
}

/**
 * Writes the snapshot `options` describe to `path`, chunk by chunk: straight to the file, or
 * through gzip with its back-pressure respected, so memory stays at a few chunks.
 */
export async function writeSnapshotFile(
  path: string,
  options: TorchSnapshotOptions,
  gzip = false,
): Promise<SnapshotFile> {
  const started = performance.now();
  const chunks = torchSnapshotChunks(options);
  let next = chunks.next();
  let fileBytes = 0;
  if (gzip) {
    const zip = createGzip();
    const file = createWriteStream(path);
    zip.pipe(file);
    zip.on('data', (data: Buffer) => {
      fileBytes += data.length;
    });
    for (; !next.done; next = chunks.next()) {
      // The chunk's buffer is reused by the next one: gzip gets a copy.
      if (!zip.write(Buffer.from(next.value))) await once(zip, 'drain');
    }
    zip.end();
    await once(file, 'close');
  } else {
    const fd = openSync(path, 'w');
    try {
      for (; !next.done; next = chunks.next()) fileBytes += writeAll(fd, next.value);
    } finally {
      closeSync(fd);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  return { ...next.value, path, fileBytes, gzip, seconds };
}
