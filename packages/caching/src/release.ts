/**
 * Giving memory back to the source: `emptyCache()` (every unused segment), `release(bytes)` (as
 * little as covers `bytes`), and the two steps of PyTorch's out-of-memory path that release cached
 * blocks: garbage collection of old cached blocks above a threshold, and releasing oversize cached
 * blocks before a retry. Time-based decay lives in `decay.ts`.
 */
import { InvalidArgumentError } from '@allot/core';
import { NIL } from './block-store';
import { processEvents, synchronizeEvents } from './pending-frees';
import { NO_CAP, type PoolCore } from './pool-core';
import { Family } from './pool-counters';
import type { FreeLists, Segment } from './pool-owner';
import { releaseSegment, unusedSegments } from './segments';
import type { Stream } from './stream-source';
import { canUnmap, unmapCachedPages } from './unmapped-pages';

/**
 * Gives back at least `bytes` of unused cached segments, and as little more as it can: the single
 * smallest unused segment that covers `bytes`, else unused segments from the largest down until
 * `bytes` are covered. Returns the bytes released.
 */
export function releaseBytes(p: PoolCore, bytes: number): number {
  if (!(Number.isSafeInteger(bytes) && bytes >= 0)) {
    throw new InvalidArgumentError('bytes', bytes, 'a non-negative safe integer');
  }
  if (bytes === 0) return 0;
  processEvents(p);
  const unused = unusedSegments(p, (owner) => owner === p.main || owner.retired);
  let cover: Segment | undefined;
  for (const seg of unused) {
    if (seg.size >= bytes && (cover === undefined || seg.size < cover.size)) cover = seg;
  }
  if (cover !== undefined) {
    const size = cover.size;
    releaseSegment(p, cover);
    return size;
  }
  unused.sort((a, b) => b.size - a.size || a.address - b.address);
  let released = 0;
  for (const seg of unused) {
    if (released >= bytes) break;
    released += seg.size;
    releaseSegment(p, seg);
  }
  return released;
}

/**
 * PyTorch's `release_cached_blocks`: waits for pending frees, releases every unused segment, and
 * unmaps the cached pages of expandable segments where the source can (`unmapped-pages.ts`).
 */
export function releaseCachedBlocks(p: PoolCore): boolean {
  synchronizeEvents(p);
  const unmaps = canUnmap(p);
  for (const seg of unusedSegments(p, (owner) => owner === p.main || owner.retired)) {
    if (!(unmaps && seg.expandable && seg.owner === p.main)) releaseSegment(p, seg);
  }
  unmapCachedPages(p);
  for (const owner of [...p.privatePools]) {
    if (owner.retired && owner.segments.size === 0) p.privatePools.delete(owner);
  }
  return true;
}

/** Whether cached block `id` is a whole segment that is not expandable (releasable). */
function isWholeSegment(p: PoolCore, id: number): boolean {
  return p.blocks.isWhole(id) && !p.segments[p.blocks.segment[id]!]!.expandable;
}

/**
 * PyTorch's `release_available_cached_blocks`: with a `max_split_size`, releases the smallest
 * oversize cached block that covers the request, else oversize blocks from the largest down.
 */
export function releaseOversize(
  p: PoolCore,
  lists: FreeLists,
  stream: Stream,
  rounded: number,
): boolean {
  const maxSplit = p.maxSplitSize;
  if (maxSplit === NO_CAP) return false;
  const index = lists.find(stream);
  if (index === undefined) return false;
  const b = p.blocks;
  const key = Math.max(rounded, maxSplit);
  const found = index.lowerBound(key, Number.NEGATIVE_INFINITY);
  if (found !== NIL && isWholeSegment(p, found)) {
    releaseSegment(p, p.segments[b.segment[found]!]!);
    return true;
  }
  let id = found === NIL ? index.last() : index.predecessor(found);
  let released = 0;
  while (id !== NIL && released < key && index.primary(id) >= maxSplit) {
    const current = id;
    id = index.predecessor(current);
    if (isWholeSegment(p, current)) {
      released += b.size[current]!;
      releaseSegment(p, p.segments[b.segment[current]!]!);
    }
  }
  return released >= key;
}

/**
 * PyTorch's `garbage_collect_cached_blocks`: above `threshold × allowed`, releases unsplit cached
 * large blocks of the pool, oldest first by the average age of the rest, until enough is freed.
 */
export function collectGarbage(p: PoolCore): void {
  const threshold = Math.floor(p.settings.garbageCollectionThreshold * p.allowedMemory);
  const reserved = p.counters.current(Family.ReservedBytes);
  if (reserved <= threshold) return;
  const target = reserved - threshold;
  const lists = p.main.large;
  const b = p.blocks;
  const age = (slot: number) => lists.searches - b.gcBase[slot]!;
  const candidates: number[] = [];
  for (const index of lists.ordered()) {
    for (let id = index.first(); id !== NIL; id = index.successor(id)) {
      if (isWholeSegment(p, id)) candidates.push(id);
    }
  }
  if (candidates.length === 0) return;
  let totalAge = 0;
  for (const id of candidates) totalAge += age(id);
  let count = candidates.length;
  let reclaimed = 0;
  let freedOne = true;
  const alive = new Set(candidates);
  while (reclaimed < target && freedOne && count > 0) {
    const threshold = totalAge / count;
    freedOne = false;
    for (const id of candidates) {
      if (!alive.has(id)) continue;
      const a = age(id);
      if (a >= threshold) {
        freedOne = true;
        reclaimed += b.size[id]!;
        totalAge -= a;
        count--;
        alive.delete(id);
        releaseSegment(p, p.segments[b.segment[id]!]!);
      }
    }
  }
}
