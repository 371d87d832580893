/**
 * The starting state: segments that were already held, with the blocks live in them, rebuilt
 * before a recording replays (see {@link PoolStateSegment}). Each segment is acquired from the source
 * at its size, its blocks are handed out as if allocated, and the gaps between them are cached.
 */
import type { Region } from '@allot/core';
import { handOut, splits } from './block-lifecycle';
import { BlockState, NIL } from './block-store';
import { indexBlock } from './cached-index';
import { NO_CAP, type PoolCore } from './pool-core';
import { Family } from './pool-counters';
import { checkPoolState, type PoolStateSegment } from './pool-state';
import { addSegment } from './segments';
import { roundSize } from './size-policy';

/**
 * Adds `segments` with their live blocks; returns the address of every block, per segment, or
 * `null` when the source (or the memory fraction) cannot supply every segment, and then nothing
 * changed. Throws `InvalidArgumentError` on a malformed state, changing nothing.
 */
export function restore(p: PoolCore, segments: readonly PoolStateSegment[]): number[][] | null {
  checkPoolState(segments);
  let total = 0;
  for (const segment of segments) total += segment.size;
  if (
    p.allowedMemory !== NO_CAP &&
    p.counters.current(Family.ReservedBytes) + total > p.allowedMemory
  ) {
    return null;
  }
  const regions: Region[] = [];
  for (const segment of segments) {
    const region = p.source.acquire(segment.size);
    if (region === null) {
      for (const acquired of regions) p.source.release(acquired);
      return null;
    }
    regions.push(region);
  }
  return segments.map((segment, i) => restoreSegment(p, segment, regions[i]!));
}

/** Registers `region` as `segment` and carves its live blocks (see {@link restore}). */
function restoreSegment(p: PoolCore, segment: PoolStateSegment, region: Region): number[] {
  const small = segment.pool === 'small';
  const stream = segment.stream ?? 0;
  const expandable = p.expandable && segment.expandable === true;
  const byStream = small ? p.expandableSmall : p.expandableLarge;
  const owner = p.main;
  const seg = addSegment(p, region, owner, small, stream, expandable && !byStream.has(stream));
  if (seg.expandable) byStream.set(stream, seg);
  const lists = small ? owner.small : owner.large;
  const b = p.blocks;
  const addresses: number[] = [];
  let slot = seg.head; // the free, unindexed rest of the segment
  const { blocks } = segment;
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i]!;
    const address = region.address + block.offset;
    const limit = (i + 1 < blocks.length ? blocks[i + 1]!.offset : segment.size) - block.offset;
    let size = block.size ?? Math.min(limit, roundSize(block.requested, p.divisions));
    if (block.size === undefined && !splits(p, small, size, limit - size)) size = limit;
    if (address > b.address[slot]!) {
      // The gap before the block stays behind as a cached block.
      const gap = b.splitFront(seg, slot, address - b.address[slot]!, BlockState.Free);
      indexBlock(p, owner, lists, stream, gap);
    }
    let next = NIL;
    if (b.size[slot]! > size) next = b.split(seg, slot, size, BlockState.Free);
    handOut(p, owner, small, slot, address, block.requested);
    addresses.push(address);
    slot = next;
    if (slot === NIL) break;
  }
  if (slot !== NIL) indexBlock(p, owner, lists, stream, slot);
  return addresses;
}
