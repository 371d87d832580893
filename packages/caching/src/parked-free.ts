/**
 * The parked free: the commonest cache hit, a block split off the front of a cached block, freed,
 * and the same size asked for again, without the merge and the split that undo each other.
 *
 * PyTorch's policy merges a freed block with its cached neighbours at once and splits the merged
 * block again on the next allocation that takes it. When a freed block merges only into the cached
 * block after it, and the next allocation asks for exactly its size where PyTorch's best fit would
 * pick the merged block, the result is the block and the cached remainder exactly as they were:
 * same addresses, sizes and keys (even the same slots). So the pool parks that block: at the free,
 * every figure of `memory_stats()` moves as the merge moves it, and only the structure (the block
 * list, the cached block's key) waits; the next allocation takes the parked block back when the
 * conditions hold, with the figures the split would give.
 *
 * ```
 *  free(a):          [ a: parked ][ n: cached, key as before a was split off ]   figures: merged
 *  allocate(|a|):    [ a: allocated ][ n: cached ]                                figures: split
 *  anything else:    settleParked → [ a + n: cached ] as PyTorch has it, then the call proceeds
 * ```
 *
 * At most one block is parked. Every other entry point of the pool (a free, an allocation that does
 * not take it, any query of blocks or segments, cache release, private pools, stream events) calls
 * {@link settleParked} first, which carries out the merge. Only the main pool's non-expandable
 * segments park, with no stats sink attached and no stream events pending, so the put-off merge
 * is the plain one of `free_block`.
 */
import { NIL } from '@allot/blocks';
import { handOut } from './block-lifecycle';
import { BlockState } from './block-store';
import { growKey, recache } from './cached-index';
import { MIN_BLOCK_SIZE } from './constants';
import { becameUnused } from './decay';
import type { PoolCore } from './pool-core';
import type { FreeLists, PoolOwner, Segment } from './pool-owner';
import { refusedAsOversize, splitsRemainder } from './size-policy';
import type { Stream } from './stream-source';

/**
 * Parks freed block `slot` of `seg` (its figures already counted as freed) when its only cached
 * neighbour is the block after it; returns false, changing nothing, when it does not qualify (then
 * free it as usual). The pool has no block parked.
 */
export function park(p: PoolCore, slot: number, seg: Segment): boolean {
  const b = p.blocks;
  const owner = seg.owner;
  if (owner.counters !== null || seg.expandable || p.sinks.length !== 0 || p.events !== null) {
    return false;
  }
  const next = b.next[slot]!;
  const prev = b.prev[slot]!;
  if (next === NIL || b.state[next] !== BlockState.Free) return false;
  if (prev !== NIL && b.state[prev] === BlockState.Free) return false;
  // What free_block does for this case, figures only (see freeBlock's merge branch).
  const small = seg.small;
  const lists = small ? owner.small : owner.large;
  const size = b.size[slot]!;
  const before = b.size[next]!;
  const merged = before + size;
  b.state[slot] = BlockState.Parked;
  b.gcBase[next] = lists.searches;
  const split = b.prev[slot] !== NIL || b.next[next] !== NIL;
  recache(p, owner, small, true, before, split, merged);
  p.counters.deactivated(small, size, b.requested[slot]!, false);
  if (!split) becameUnused(p, seg);
  p.parked = slot;
  return true;
}

/**
 * The parked block, allocated for a request of `size` (rounded `rounded`, aligned `align`) on
 * `stream` from `owner`'s `lists`, when PyTorch would split it off the merged block right there;
 * its address, or -1 (nothing changed: settle, then take the usual path).
 */
export function takeParked(
  p: PoolCore,
  owner: PoolOwner,
  lists: FreeLists,
  stream: Stream,
  size: number,
  rounded: number,
  align: number,
): number {
  const b = p.blocks;
  const slot = p.parked;
  if (b.size[slot] !== rounded || align > MIN_BLOCK_SIZE) return -1;
  const seg = p.segments[b.segment[slot]!]!;
  if (seg.owner !== owner || seg.stream !== stream || seg.small !== lists.small) return -1;
  const next = b.next[slot]!;
  const remaining = b.size[next]!;
  const merged = rounded + remaining;
  // alloc_found_block splits the merged block here, and get_free_block takes it at all.
  if (!splitsRemainder(lists.small, rounded, remaining, p.maxSplitSize)) return -1;
  if (refusedAsOversize(rounded, merged, p.maxSplitSize, p.maxNonSplitRounding)) return -1;
  // Best fit over the merged state: the merged block, unless a cached block sorts between the
  // request and it. `next` still has its key from before the merge, below the merged block's.
  const index = lists.find(stream)!;
  if (index.lowerBound(rounded, Number.NEGATIVE_INFINITY) !== next) return -1;
  const after = index.successor(next);
  if (after !== NIL) {
    const key = index.primary(after);
    if (key < merged || (key === merged && index.secondary(after) < b.address[slot]!)) return -1;
  }
  // Taken: findFreeBlock's count, useBlock's split figures, handOut.
  if (p.countSearches) lists.searches++;
  p.parked = NIL;
  if (p.idle !== null) p.idle.delete(seg);
  b.gcBase[next] = lists.searches;
  const wasSplit = b.prev[slot] !== NIL || b.next[next] !== NIL;
  recache(p, owner, lists.small, wasSplit, merged, true, remaining);
  return handOut(p, owner, lists.small, slot, b.address[slot]!, size);
}

/** Carries out the parked block's merge, if any: the pool is then as PyTorch has it. */
export function settleParked(p: PoolCore): void {
  const slot = p.parked;
  if (slot === NIL) return;
  p.parked = NIL;
  const b = p.blocks;
  const seg = p.segments[b.segment[slot]!]!;
  const lists = seg.small ? seg.owner.small : seg.owner.large;
  const next = b.next[slot]!;
  b.state[slot] = BlockState.Free;
  b.absorbPrevious(seg, next);
  growKey(lists.find(seg.stream)!, next, b.size[next]!, b.address[next]!);
}
