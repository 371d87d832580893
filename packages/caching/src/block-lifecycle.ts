/**
 * The hot path of a block: PyTorch's `get_free_block` (best fit, with the oversize rules),
 * `alloc_found_block` (align, split the remainder off, hand out) and `free_block` (merge with free
 * neighbours, cache the result).
 *
 * ```
 *  findFreeBlock ─► useBlock ─┬─ cached, splits: the remainder keeps the slot and index entry
 *                             └─ otherwise: padding block, remainder block ─► handOut
 *  freeBlock ─► merge with the free previous / next block (its slot and entry survive) ─► cache
 * ```
 *
 * A cache hit is one ordered-index lookup; when the block splits, the remainder is rekeyed in place
 * while its order holds, so nothing is removed or inserted. A free merging with a cached neighbour
 * likewise grows that neighbour's key in place; only a free with no cached neighbour inserts. Then
 * an address-table insert or removal and a few batched counter stores; no object, array or closure
 * is allocated.
 */
import { NIL, type OrderedIndex } from '@allot/blocks';
import { alignUp } from '@allot/core';
import { BlockState } from './block-store';
import { growKey, indexBlock, recache, shrinkKey, unindexBlock } from './cached-index';
import { MIN_BLOCK_SIZE } from './constants';
import { becameUnused } from './decay';
import { preferMapped } from './expandable-segments';
import type { PoolCore } from './pool-core';
import type { FreeLists, PoolOwner, Segment } from './pool-owner';
import { refusedAsOversize, splitsRemainder } from './size-policy';
import type { Stream } from './stream-source';

/**
 * PyTorch's `get_free_block`: best fit in the stream's index, with the oversize rules. Returns the
 * block, left in its index (kept in `p.foundIn`) for {@link useBlock}, or NIL.
 */
export function findFreeBlock(
  p: PoolCore,
  lists: FreeLists,
  stream: Stream,
  rounded: number,
  align: number,
): number {
  if (p.countSearches) lists.searches++;
  const index = stream === 0 ? lists.stream0 : lists.byStream.get(stream);
  if (index == null) return NIL;
  let id = index.lowerBound(rounded, Number.NEGATIVE_INFINITY);
  if (id === NIL) return NIL;
  if (align > MIN_BLOCK_SIZE) {
    const b = p.blocks;
    while (id !== NIL) {
      const start = b.address[id]!;
      if (alignUp(start, align) + rounded <= start + b.size[id]!) break;
      id = index.successor(id);
    }
    if (id === NIL) return NIL;
  }
  if (p.expandable) id = preferMapped(p, index, id);
  if (refusedAsOversize(rounded, index.primary(id), p.maxSplitSize, p.maxNonSplitRounding)) {
    return NIL;
  }
  p.foundIn = index;
  return id;
}

/** Whether a block of `rounded + remaining` bytes in `small`'s pool serving `rounded` splits. */
export function splits(p: PoolCore, small: boolean, rounded: number, remaining: number): boolean {
  return splitsRemainder(small || p.expandable, rounded, remaining, p.maxSplitSize);
}

/**
 * PyTorch's `alloc_found_block`: aligns, splits the remainder off, marks the block allocated.
 * `index` holds `slot` when it was found cached; null when `slot` is unindexed (a new segment).
 *
 * One function, as in PyTorch: a cache hit that splits in place returns early; every other case
 * (a block that does not split, a fresh segment, alignment padding) takes the rest of the body.
 * Kept whole on purpose, with the split test written out on the cache-hit branch: split into
 * smaller functions, the compiler inlines it into `allocateOn` and runs out of inlining budget for
 * the calls below it (`splitFront`, `shrinkKey`, `handOut` and its counters), which then cost a
 * call each on every hit.
 */
export function useBlock(
  p: PoolCore,
  owner: PoolOwner,
  lists: FreeLists,
  slot: number,
  size: number,
  rounded: number,
  align: number,
  index: OrderedIndex | null,
): number {
  const b = p.blocks;
  const seg = p.segments[b.segment[slot]!]!;
  if (p.idle !== null) p.idle.delete(seg);
  let address = b.address[slot]!;
  if (index !== null) {
    const total = b.size[slot]!;
    const remaining = total - rounded;
    if (
      splitsRemainder(lists.small || p.expandable, rounded, remaining, p.maxSplitSize) &&
      (align <= MIN_BLOCK_SIZE || alignUp(address, align) === address)
    ) {
      // The remainder keeps the cached block's slot and index entry, rekeyed (in place when its
      // order among the cached blocks holds); the allocation takes a fresh slot in front of it.
      const wasSplit = (b.prev[slot] !== NIL || b.next[slot] !== NIL) && !seg.expandable;
      const used = b.splitFront(seg, slot, rounded, BlockState.Allocated);
      b.gcBase[slot] = lists.searches;
      shrinkKey(index, slot, remaining, address + rounded);
      recache(p, owner, lists.small, wasSplit, total, !seg.expandable, remaining);
      return handOut(p, owner, lists.small, used, address, size);
    }
    unindexBlock(p, owner, lists.small, index, slot);
  }
  if (align > MIN_BLOCK_SIZE) {
    const start = alignUp(address, align);
    if (start !== address) {
      // The padding before an aligned start stays behind as a free block of its own.
      const pad = b.splitFront(seg, slot, start - address, BlockState.Free);
      indexBlock(p, owner, lists, seg.stream, pad);
      address = start;
    }
  }
  const remaining = b.size[slot]! - rounded;
  if (splits(p, lists.small, rounded, remaining)) {
    const rest = b.split(seg, slot, rounded, BlockState.Free);
    indexBlock(p, owner, lists, seg.stream, rest);
  }
  return handOut(p, owner, lists.small, slot, address, size);
}

/** Marks `slot` (at `address`) allocated for a request of `size` bytes and counts it. */
export function handOut(
  p: PoolCore,
  owner: PoolOwner,
  small: boolean,
  slot: number,
  address: number,
  size: number,
): number {
  p.live.set(address, slot);
  markAllocated(p, owner, small, slot, size);
  return address;
}

/** Marks `slot` allocated for a request of `size` bytes and counts it; the address table aside. */
export function markAllocated(
  p: PoolCore,
  owner: PoolOwner,
  small: boolean,
  slot: number,
  size: number,
): void {
  const b = p.blocks;
  b.state[slot] = BlockState.Allocated;
  b.requested[slot] = size;
  const usable = b.size[slot]!;
  const oversize = usable >= p.maxSplitSize;
  p.counters.allocated(small, usable, size, oversize);
  if (owner.counters !== null) owner.counters.allocated(small, usable, size, oversize);
}

/**
 * PyTorch's `free_block`: merges with free neighbours and caches the result (`pending`: the block
 * waited for streams since its free). A merged block keeps a free neighbour's slot and index entry
 * (the previous block's when it is free), rekeyed in place when its order among the cached blocks
 * holds. The whole-segment tests are written out rather than `isWhole` calls, for the same inlining
 * budget as {@link useBlock}'s.
 */
export function freeBlock(p: PoolCore, slot: number, seg: Segment, pending: boolean): void {
  const b = p.blocks;
  const owner = seg.owner;
  const small = seg.small;
  const lists = small ? owner.small : owner.large;
  const address = b.address[slot]!;
  const size = b.size[slot]!;
  const requested = b.requested[slot]!;
  b.state[slot] = BlockState.Free;
  const prev = b.prev[slot]!;
  const next = b.next[slot]!;
  const prevFree = prev !== NIL && b.state[prev] === BlockState.Free;
  const nextFree = next !== NIL && b.state[next] === BlockState.Free;
  let cached = slot;
  if (!prevFree && !nextFree) {
    indexBlock(p, owner, lists, seg.stream, slot);
  } else {
    const index = lists.find(seg.stream)!;
    // A cached neighbour of a block is always part of a split segment.
    const wasSplit = !seg.expandable;
    // The survivor: the previous block when it is free, else the next one.
    cached = prevFree ? prev : next;
    const before = b.size[cached]!;
    if (prevFree) {
      if (nextFree) {
        unindexBlock(p, owner, small, index, next);
        b.absorbNext(seg, slot);
      }
      b.absorbNext(seg, prev);
    } else {
      b.absorbPrevious(seg, next);
    }
    const merged = b.size[cached]!;
    b.gcBase[cached] = lists.searches;
    growKey(index, cached, merged, b.address[cached]!);
    const split = (b.prev[cached] !== NIL || b.next[cached] !== NIL) && !seg.expandable;
    recache(p, owner, small, wasSplit, before, split, merged);
  }
  p.counters.deactivated(small, size, requested, pending);
  if (owner.counters !== null) owner.counters.deactivated(small, size, requested, pending);
  if (p.sinks.length !== 0) {
    for (const sink of p.sinks) sink.freeCompleted(address, size, seg.stream);
  }
  if (b.prev[cached] === NIL && b.next[cached] === NIL) becameUnused(p, seg);
}
