/**
 * Streams and pending frees (`torch.Tensor.record_stream`). A block used on streams other than its
 * segment's is not reusable when freed: one event per such stream is recorded on the source, the
 * block waits as a pending free (neither allocated nor free), and it is freed for real once the
 * source reports every one of its events done. On a source without stream hooks streams are tags
 * whose work is always done, and none of this runs.
 *
 * ```
 *  recordStream(a, s) ─► streamUses[slot] = [s, ...]
 *  free(a) ─► recordEvent(s) per stream ─► pending[s]: (event, slot), oldest first
 *  processEvents / allocate ─► queryEvent done ─► events[slot]-- ─► 0: freeBlock
 *  emptyCache / out of memory ─► synchronizeEvent (wait) ─► freeBlock
 * ```
 */
import { InvalidArgumentError } from '@allot/core';
import { freeBlock } from './block-lifecycle';
import type { PendingEvent, PoolCore } from './pool-core';
import type { Stream } from './stream-source';

/** Throws unless `stream` is a stream: a non-negative safe integer. */
export function checkStream(stream: number): void {
  if (!Number.isSafeInteger(stream) || stream < 0) {
    throw new InvalidArgumentError('stream', stream, 'a non-negative safe integer (0: default)');
  }
}

/** Notes that live block `slot` is used by work queued on `stream` (see `recordStream`). */
export function recordStreamUse(p: PoolCore, slot: number, stream: Stream): void {
  if (p.events === null) return;
  const seg = p.segments[p.blocks.segment[slot]!]!;
  if (stream === seg.stream) return;
  const uses = p.streamUses.get(slot);
  if (uses === undefined) p.streamUses.set(slot, [stream]);
  else if (!uses.includes(stream)) uses.push(stream);
}

/** Records an event on each stream of `uses` for the pending free of `slot`. */
export function insertEvents(p: PoolCore, slot: number, uses: readonly Stream[]): void {
  const events = p.events!;
  const b = p.blocks;
  for (const stream of uses) {
    const event = events.recordEvent(stream);
    b.events[slot]! += 1;
    let queue = p.pending.get(stream);
    if (queue === undefined) {
      queue = [];
      p.pending.set(stream, queue);
    }
    queue.push({ event, slot });
    p.pendingCount++;
  }
}

/** Makes every pending free whose streams are done reusable now. */
export function processEvents(p: PoolCore): void {
  const events = p.events;
  if (events === null || p.pendingCount === 0) return;
  for (const queue of p.pending.values()) {
    let done = 0;
    while (done < queue.length && events.queryEvent(queue[done]!.event)) done++;
    if (done === 0) continue;
    const finished = queue.splice(0, done);
    for (const e of finished) eventDone(p, e);
  }
}

/** PyTorch's `synchronize_and_free_events`: waits where the source can, then completes. */
export function synchronizeEvents(p: PoolCore): void {
  const events = p.events;
  if (events === null || p.pendingCount === 0) return;
  if (typeof events.synchronizeEvent !== 'function') {
    processEvents(p);
    return;
  }
  p.counters.numSyncAllStreams++;
  for (const queue of p.pending.values()) {
    const all = queue.splice(0, queue.length);
    for (const e of all) {
      events.synchronizeEvent(e.event);
      eventDone(p, e);
    }
  }
}

/** Forgets every pending free and its events (the pool is being reset). */
export function dropPendingFrees(p: PoolCore): void {
  for (const queue of p.pending.values()) {
    for (const e of queue) p.events?.destroyEvent?.(e.event);
  }
  p.pending.clear();
  p.pendingCount = 0;
  p.streamUses.clear();
}

function eventDone(p: PoolCore, e: PendingEvent): void {
  p.events?.destroyEvent?.(e.event);
  p.pendingCount--;
  const b = p.blocks;
  b.events[e.slot]! -= 1;
  if (b.events[e.slot] === 0) freeBlock(p, e.slot, p.segments[b.segment[e.slot]!]!, true);
}
