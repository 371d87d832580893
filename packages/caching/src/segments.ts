/**
 * Segments: regions from the source, each holding a chain of blocks in the block store. A segment
 * is registered with one free block covering it, counted as a `cudaMalloc` (segment and reserved
 * figures, stats sinks), and given back whole once every block in it is free.
 */
import type { Region } from '@allot/core';
import { BlockState, NIL } from './block-store';
import { unindexBlock } from './cached-index';
import type { PoolCore } from './pool-core';
import { Family } from './pool-counters';
import type { PoolOwner, Segment } from './pool-owner';
import type { Stream } from './stream-source';

/** Registers a region as a segment holding one free, unindexed block. */
export function addSegment(
  p: PoolCore,
  region: Region,
  owner: PoolOwner,
  small: boolean,
  stream: Stream,
  expandable: boolean,
): Segment {
  const id = p.spareSegmentIds.pop() ?? p.segments.length;
  const seg: Segment = {
    id,
    region,
    address: region.address,
    size: region.size,
    owner,
    small,
    stream,
    expandable,
    head: NIL,
    tail: NIL,
    idleSince: 0,
    unmapped: 0,
  };
  p.blocks.first(seg, region.address, region.size, BlockState.Free);
  p.segments[id] = seg;
  owner.segments.add(seg);
  for (const c of owner.counters === null ? [p.counters] : [p.counters, owner.counters]) {
    c.increase(Family.Segment, small, 1);
    c.increase(Family.ReservedBytes, small, region.size);
    if (region.size >= p.maxSplitSize) c.increase(Family.OversizeSegments, small, 1);
    c.numDeviceAlloc++;
  }
  for (const sink of p.sinks) sink.segmentAlloc(region.address, region.size, stream);
  return seg;
}

/** Gives an entirely free segment back to the source. */
export function releaseSegment(p: PoolCore, seg: Segment): void {
  const b = p.blocks;
  const slot = seg.head;
  const owner = seg.owner;
  const lists = seg.small ? owner.small : owner.large;
  const index = lists.find(seg.stream);
  if (index?.has(slot)) unindexBlock(p, owner, seg.small, index, slot);
  b.recycle(slot);
  for (const c of owner.counters === null ? [p.counters] : [p.counters, owner.counters]) {
    c.decrease(Family.Segment, seg.small, 1);
    c.decrease(Family.ReservedBytes, seg.small, seg.size - seg.unmapped);
    if (seg.size >= p.maxSplitSize) c.decrease(Family.OversizeSegments, seg.small, 1);
    c.numDeviceFree++;
  }
  p.segments[seg.id] = undefined;
  p.spareSegmentIds.push(seg.id);
  owner.segments.delete(seg);
  p.idle?.delete(seg);
  if (seg.expandable) {
    const byStream = seg.small ? p.expandableSmall : p.expandableLarge;
    if (byStream.get(seg.stream) === seg) byStream.delete(seg.stream);
  }
  p.source.release(seg.region);
  // An expandable segment's unmapped pages were reported as they went.
  if (seg.unmapped === 0) {
    for (const sink of p.sinks) sink.segmentFree(seg.address, seg.size, seg.stream);
  }
}

/** Whether every byte of `seg` is cached (one free block). */
export function isUnused(p: PoolCore, seg: Segment): boolean {
  const b = p.blocks;
  const h = seg.head;
  return b.next[h] === NIL && b.state[h] === BlockState.Free;
}

/** Segments entirely free, of the owners `which` accepts: large pool first, as PyTorch. */
export function unusedSegments(p: PoolCore, which: (owner: PoolOwner) => boolean): Segment[] {
  const out: Segment[] = [];
  for (const seg of p.segments) {
    if (seg !== undefined && which(seg.owner) && isUnused(p, seg)) out.push(seg);
  }
  return out.sort((x, y) => Number(x.small) - Number(y.small) || x.address - y.address);
}

/** Gives back the unused segments of a private pool's `owner`, waiting for nothing. */
export function releaseUnusedOf(p: PoolCore, owner: PoolOwner): void {
  for (const seg of unusedSegments(p, (o) => o === owner)) releaseSegment(p, seg);
}
