/**
 * Stream-ordered sources: the hooks a memory source offers when work on its memory is queued on
 * streams (CUDA streams, or any queue that runs behind the caller). The pool uses them for
 * `recordStream`: a block used on another stream is reused only once that stream's work, queued
 * before the free, has completed. The hooks mirror `cudaEventRecord` / `cudaEventQuery` /
 * `cudaEventSynchronize` / `cudaEventDestroy`.
 *
 * A source without them (the host source) has no queued work: streams are plain tags, and every
 * recorded use is complete at the moment of the free.
 */
import type { MemorySource, Region } from '@allot/core';

/** A stream, by number: 0 is the default stream. A non-negative safe integer. */
export type Stream = number;

/** Event hooks of a stream-ordered source. `E` is the source's event handle. */
export interface StreamEvents<E = unknown> {
  /** Records an event on `stream` after the work queued on it so far; returns its handle. */
  recordEvent(stream: Stream): E;
  /** Whether the work before `event` has completed (never blocks). */
  queryEvent(event: E): boolean;
  /** Blocks until `event` completes. Used by `emptyCache()`; without it only completed events count. */
  synchronizeEvent?(event: E): void;
  /** Gives the event handle back once the pool no longer needs it. */
  destroyEvent?(event: E): void;
}

/** A memory source whose memory is used by work queued on streams. */
export type StreamOrderedSource<R extends Region = Region, E = unknown> = MemorySource<R> &
  StreamEvents<E>;

/** Whether `source` offers the stream hooks (`recordEvent` and `queryEvent`). */
export function isStreamOrderedSource<R extends Region>(
  source: MemorySource<R>,
): source is StreamOrderedSource<R> {
  const s = source as Partial<StreamEvents>;
  return typeof s.recordEvent === 'function' && typeof s.queryEvent === 'function';
}
