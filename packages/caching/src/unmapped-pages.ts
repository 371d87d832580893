/**
 * Expandable segments under memory pressure: PyTorch unmaps the cached pages of its expandable
 * segments before it gives up on a request (`release_cached_blocks` → `unmap_block`), and maps
 * pages again into the lowest hole with room when a later request needs them
 * (`try_allocate_expandable_block`). Only over a source that can `unmap` and `remap`.
 *
 * ```
 *  before:  │ live │    free (cached)    │ live │ free │
 *  unmap:   │ live │fr│ unmapped  │ free │ live │ free │   whole pages only (2 MiB small, 20 MiB large);
 *                  ▲ page edges ▲                         the ends of the free block stay cached
 *  a request of 30 MiB later: the lowest hole with room (with the free block before it) is mapped
 *           │ live │fr+ mapped ─────► │unm.│ free │ live │ free │
 * ```
 *
 * An unmapped block is neither free nor reserved: it never merges with free blocks, is in no free
 * index, and its bytes leave the reserved figures and the source's count.
 */
import { BlockState, NIL } from './block-store';
import { indexBlock, unindexBlock } from './cached-index';
import { LARGE_BUFFER, SMALL_BUFFER } from './constants';
import type { PoolCore } from './pool-core';
import { Family } from './pool-counters';
import type { Segment } from './pool-owner';
import { releaseSegment } from './segments';

/** Whether the pool can unmap pages of its expandable segments (the source supports it). */
export function canUnmap(p: PoolCore): boolean {
  return p.expandable && p.source.unmap !== undefined && p.source.remap !== undefined;
}

/** Page size of an expandable segment: what its source maps at a time. */
function pageOf(seg: Segment): number {
  return seg.small ? SMALL_BUFFER : LARGE_BUFFER;
}

/**
 * PyTorch's `release_blocks` for expandable segments: unmaps the whole pages inside every cached
 * block of the pool's expandable segments, large pool first, each in (stream, size, address) order
 * as PyTorch's free-block set holds them; a segment left with nothing mapped is given back.
 */
export function unmapCachedPages(p: PoolCore): void {
  if (!canUnmap(p)) return;
  for (const lists of [p.main.large, p.main.small]) {
    const cached: number[] = [];
    for (const index of lists.ordered()) {
      for (let id = index.first(); id !== NIL; id = index.successor(id)) {
        if (p.segments[p.blocks.segment[id]!]!.expandable) cached.push(id);
      }
    }
    // Unmapping splits and merges around each block, never the other cached blocks listed.
    for (const id of cached) unmapBlock(p, id);
  }
}

/** PyTorch's `unmap_block`: unmaps the whole pages of cached block `id`. */
function unmapBlock(p: PoolCore, id: number): void {
  const b = p.blocks;
  const seg = p.segments[b.segment[id]!]!;
  const page = pageOf(seg);
  const offset = b.address[id]! - seg.address;
  const blockEnd = offset + b.size[id]!;
  const begin = Math.ceil(offset / page) * page;
  const end = Math.floor(blockEnd / page) * page;
  if (end <= begin) return;
  const lists = seg.small ? p.main.small : p.main.large;
  unindexBlock(p, p.main, seg.small, lists.find(seg.stream)!, id);
  const slot = id;
  if (begin > offset) {
    const before = b.splitFront(seg, slot, begin - offset, BlockState.Free);
    indexBlock(p, p.main, lists, seg.stream, before);
  }
  if (end < blockEnd) {
    const after = b.split(seg, slot, end - begin, BlockState.Free);
    indexBlock(p, p.main, lists, seg.stream, after);
  }
  b.state[slot] = BlockState.Unmapped;
  const size = end - begin;
  const prev = b.prev[slot]!;
  if (prev !== NIL && b.state[prev] === BlockState.Unmapped) b.absorbPrevious(seg, slot);
  const next = b.next[slot]!;
  if (next !== NIL && b.state[next] === BlockState.Unmapped) b.absorbNext(seg, slot);
  seg.unmapped += size;
  p.counters.decrease(Family.ReservedBytes, seg.small, size);
  p.source.unmap!(seg.region, begin, size);
  for (const sink of p.sinks) sink.segmentFree(seg.address + begin, size, seg.stream);
  if (b.isWhole(slot)) releaseSegment(p, seg); // nothing mapped is left (`release_expandable_segment`)
}

/** What {@link mapIntoHole} found: a block, no hole worth trying, or a hole it could not map. */
export const NO_HOLE = -2;

/**
 * PyTorch's `try_allocate_expandable_block` over the holes of `seg`: the lowest unmapped block
 * (with the cached block before it) from which `rounded` bytes of cached or unmapped memory follow,
 * or which runs to the segment's end (the address space past it is unmapped too), is mapped as far
 * as needed. Returns a free, unindexed block of at least `rounded` bytes; {@link NO_HOLE} when the
 * segment has no such hole (the caller grows the segment's end); NIL when mapping failed (the pages
 * mapped so far stay cached, as in PyTorch).
 */
export function mapIntoHole(p: PoolCore, seg: Segment, rounded: number): number {
  if (seg.unmapped === 0 || !canUnmap(p)) return NO_HOLE;
  const b = p.blocks;
  for (let s = seg.head; s !== NIL; s = b.next[s]!) {
    if (b.state[s] !== BlockState.Unmapped) continue;
    const prev = b.prev[s]!;
    const start = prev !== NIL && b.state[prev] === BlockState.Free ? prev : s;
    let room = 0;
    let t = start;
    while (t !== NIL && room < rounded && isAvailable(b.state[t]!)) {
      room += b.size[t]!;
      t = b.next[t]!;
    }
    const toEnd = t === NIL && room < rounded;
    if (room >= rounded || toEnd) return mapRun(p, seg, start, rounded);
  }
  return NO_HOLE;
}

function isAvailable(state: number): boolean {
  return state === BlockState.Free || state === BlockState.Unmapped;
}

/** Maps from `start` on until one free block holds `rounded` bytes (growing the end if needed). */
function mapRun(p: PoolCore, seg: Segment, start: number, rounded: number): number {
  const b = p.blocks;
  const lists = seg.small ? p.main.small : p.main.large;
  let acc: number;
  if (b.state[start] === BlockState.Free) {
    unindexBlock(p, p.main, seg.small, lists.find(seg.stream)!, start);
    acc = start;
  } else {
    acc = mapBlock(p, seg, start, rounded);
    if (acc === NIL) return NIL;
  }
  while (b.size[acc]! < rounded) {
    const next = b.next[acc]!;
    const mapped =
      next === NIL
        ? growEnd(p, seg, acc, rounded - b.size[acc]!)
        : mapBlock(p, seg, next, rounded - b.size[acc]!);
    if (mapped === NIL) {
      indexBlock(p, p.main, lists, seg.stream, acc);
      return NIL;
    }
    acc = mapped;
  }
  return acc;
}

/**
 * Maps the first `want` bytes (whole pages, at most the block) of unmapped block `slot` and merges
 * them with the free blocks beside it; returns the merged free, unindexed block, or NIL when the
 * source has no memory for them. A free block before it is unindexed already (the run so far).
 */
function mapBlock(p: PoolCore, seg: Segment, slot: number, want: number): number {
  const b = p.blocks;
  const page = pageOf(seg);
  const size = Math.min(b.size[slot]!, Math.ceil(want / page) * page);
  const offset = b.address[slot]! - seg.address;
  if (!p.source.remap!(seg.region, offset, size)) return NIL;
  if (size < b.size[slot]!) b.split(seg, slot, size, BlockState.Unmapped);
  b.state[slot] = BlockState.Free;
  seg.unmapped -= size;
  p.counters.increase(Family.ReservedBytes, seg.small, size);
  for (const sink of p.sinks) sink.segmentAlloc(seg.address + offset, size, seg.stream);
  const merged = slot;
  const prev = b.prev[merged]!;
  if (prev !== NIL && b.state[prev] === BlockState.Free) {
    b.absorbPrevious(seg, merged);
  }
  const next = b.next[merged]!;
  if (next !== NIL && b.state[next] === BlockState.Free) {
    const lists = seg.small ? p.main.small : p.main.large;
    unindexBlock(p, p.main, seg.small, lists.find(seg.stream)!, next);
    b.absorbNext(seg, merged);
  }
  return merged;
}

/** Grows `seg` past its end by `want` bytes (whole pages) into the free tail block `tail`. */
function growEnd(p: PoolCore, seg: Segment, tail: number, want: number): number {
  const page = pageOf(seg);
  const before = seg.region.size;
  if (!p.source.grow!(seg.region, seg.size + Math.ceil(want / page) * page)) return NIL;
  const added = seg.region.size - before;
  countGrowth(p, seg, seg.address + before, added);
  p.blocks.size[tail]! += added;
  return tail;
}

/** A segment grew by `added` bytes at `at`: reserved figures and a segment event for the sinks. */
export function countGrowth(p: PoolCore, seg: Segment, at: number, added: number): void {
  seg.size += added;
  p.counters.increase(Family.ReservedBytes, seg.small, added);
  for (const sink of p.sinks) sink.segmentAlloc(at, added, seg.stream);
}
