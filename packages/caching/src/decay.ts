/**
 * Time-based decay (jemalloc's, beyond PyTorch): with `decayMs`, a segment that has been entirely
 * free for that long goes back to the source. Segments enter the idle set, in the order they became
 * unused, when their last block is freed; a reuse takes them out. Also where a segment of a released
 * private pool goes back as soon as it is unused.
 */
import type { PoolCore } from './pool-core';
import type { Segment } from './pool-owner';
import { isUnused, releaseSegment } from './segments';

/**
 * Releases segments that have been entirely free for `decayMs` or longer, by the clock's reading
 * `now`. Returns the bytes released (0 without `decayMs`).
 */
export function decay(p: PoolCore, now: number = p.clock()): number {
  const idle = p.idle;
  if (idle === null || idle.size === 0) return 0;
  const limit = now - p.decayMs!;
  let released = 0;
  for (const seg of idle) {
    if (seg.idleSince > limit) break;
    if (!isUnused(p, seg)) {
      idle.delete(seg);
      continue;
    }
    released += seg.size;
    releaseSegment(p, seg);
  }
  return released;
}

/** A segment's memory is all free again: released pools give it back, decay notes the time. */
export function becameUnused(p: PoolCore, seg: Segment): void {
  if (seg.owner.retired) {
    releaseSegment(p, seg);
    if (seg.owner.segments.size === 0) p.privatePools.delete(seg.owner);
    return;
  }
  const idle = p.idle;
  if (idle === null) return;
  const now = p.clock();
  seg.idleSince = now;
  idle.delete(seg);
  idle.add(seg);
  const first = idle.values().next().value;
  if (first !== undefined && first.idleSince <= now - p.decayMs!) decay(p, now);
}
