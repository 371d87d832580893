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
 * The same merged block serves a request of another size as well, when best fit would again split
 * it off the front of the merged block: the boundary between the parked block and the cached one
 * moves (`BlockStore.moveBoundary`) and the cached block is rekeyed, which leaves the blocks,
 * addresses and keys the merge and the split would, without either. That is the cache hit of
 * tensors whose sizes take turns in one segment.
 *
 * ```
 *  allocate(|b|):    [ b: allocated ][ n': cached, key (|a| + |n| − |b|, address of a + |b|) ]
 * ```
 *
 * At most one block is parked. Every other entry point of the pool (a free, an allocation that does
 * not take it, any query of blocks or segments, cache release, private pools, stream events) calls
 * {@link settleParked} first, which carries out the merge. Only the main pool's non-expandable
 * segments park, with no stats sink attached and no stream events pending, so the put-off merge
 * is the plain one of `free_block`.
 *
 * The hot cycle: a tensor allocated and freed in a loop. Once a parked block is taken back, the
 * pool has changed in nothing but that block, so its next free parks it again and the same request
 * then takes it again, each passing the checks the first take passed: neither call searches or
 * checks anything, and the block keeps its address-table entry throughout (stale while it is
 * parked; `owns` and the other lookups see through it). The cycle's figures are counted rather than
 * stored: once the request has come back once, the next free and allocation are counted in full
 * and their cumulative increases measured, and every repeat after them adds one to a count. A
 * repeat passes through exactly the figures the measured cycle did, so no peak can rise;
 * {@link coolHot}, run before any other call (and before the peaks or the cumulative figures are
 * reset), adds the count times the measured increases, and the figures of a free it still owes.
 *
 * ```
 *  take (checked) ─► free ─► take ─► free ─► take ─► free ─► take ─► …   any other call: coolHot,
 *                    └─ eager ──────┘   └─ measured ───┘   └─ counted ─┘    settleParked
 * ```
 */
import { NIL } from '@allot/blocks';
import { markAllocated } from './block-lifecycle';
import { BlockState } from './block-store';
import { growKey, recache } from './cached-index';
import { MIN_BLOCK_SIZE } from './constants';
import { becameUnused } from './decay';
import { HotPhase, type PoolCore } from './pool-core';
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
  parkFigures(p, slot, seg);
  return true;
}

/**
 * What free_block does when block `slot` merges into the cached block after it, figures only (see
 * freeBlock's merge branch); the block is then the parked one.
 */
function parkFigures(p: PoolCore, slot: number, seg: Segment): void {
  const b = p.blocks;
  const owner = seg.owner;
  const small = seg.small;
  const lists = small ? owner.small : owner.large;
  const next = b.next[slot]!;
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
}

/**
 * The parked block, allocated for a request of `size` (rounded `rounded`, aligned `align`) on
 * `stream` from `owner`'s `lists`, when PyTorch's best fit would take the merged block and split
 * the request off its front: of the parked block's own size (it comes back as it was) or of another
 * (the boundary moves). Its address, or -1 (nothing changed: settle, then take the usual path).
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
  if (align > MIN_BLOCK_SIZE) return -1;
  const seg = p.segments[b.segment[slot]!]!;
  if (seg.owner !== owner || seg.stream !== stream || seg.small !== lists.small) return -1;
  const next = b.next[slot]!;
  const address = b.address[slot]!;
  const merged = b.size[slot]! + b.size[next]!;
  const remaining = merged - rounded;
  // alloc_found_block splits the merged block here (a request larger than the merged block leaves
  // a negative remainder, which never splits), and get_free_block takes it at all.
  if (!splitsRemainder(lists.small, rounded, remaining, p.maxSplitSize)) return -1;
  if (refusedAsOversize(rounded, merged, p.maxSplitSize, p.maxNonSplitRounding)) return -1;
  // Best fit over the merged state: the merged block, unless a cached block other than `next`
  // sorts from the request up to it. `next` still has its key from before the merge, below the
  // merged block's, so it is skipped.
  const index = lists.find(stream)!;
  let after = index.lowerBound(rounded, Number.NEGATIVE_INFINITY);
  if (after === next) after = index.successor(next);
  if (after !== NIL) {
    const key = index.primary(after);
    if (key < merged || (key === merged && index.secondary(after) < address)) return -1;
  }
  if (b.size[slot] !== rounded) {
    // Another size off the front of the same merged block: the split lands elsewhere.
    b.moveBoundary(slot, rounded);
    index.rekey(next, remaining, address + rounded, remaining);
  }
  retake(p, seg, slot, size);
  p.live.set(address, slot);
  // Nothing has changed but this block: its free and the same request again repeat this cycle.
  p.hot = slot;
  // Cycles are counted only where a cycle moves nothing but figures (no search clock, no decay).
  p.hotPhase = p.countSearches || p.idle !== null ? HotPhase.Eager : HotPhase.Armed;
  return address;
}

/**
 * Takes parked block `slot` of `seg` for a request of `size` bytes, its checks passed: findFreeBlock's
 * count, useBlock's split figures and handOut's, all but the address table.
 */
function retake(p: PoolCore, seg: Segment, slot: number, size: number): void {
  const b = p.blocks;
  const owner = seg.owner;
  const small = seg.small;
  const lists = small ? owner.small : owner.large;
  if (p.countSearches) lists.searches++;
  p.parked = NIL;
  if (p.idle !== null) p.idle.delete(seg);
  const next = b.next[slot]!;
  const remaining = b.size[next]!;
  b.gcBase[next] = lists.searches;
  const wasSplit = b.prev[slot] !== NIL || b.next[next] !== NIL;
  recache(p, owner, small, wasSplit, b.size[slot]! + remaining, true, remaining);
  markAllocated(p, owner, small, slot, size);
}

/**
 * The hot cycle's free: block {@link PoolCore.hot}, allocated by the last call to the pool, is freed.
 * Nothing has changed since its take, which passed every check {@link park} makes, so it parks
 * again, with the figures of the caller's free and of the merge; its address-table entry stays (a
 * parked block's entry is stale: see {@link coolHot}).
 */
export function reparkHot(p: PoolCore): void {
  const slot = p.hot;
  if (p.hotPhase === HotPhase.Counted) {
    // Figures owed until the cycle cools (coolHot).
    p.blocks.state[slot] = BlockState.Parked;
    p.parked = slot;
    return;
  }
  if (p.hotPhase === HotPhase.Mark) {
    p.counters.markCycle();
    p.hotPhase = HotPhase.Measure;
  }
  repark(p, slot);
}

/** Parks allocated block `slot` with the figures of its free by the caller and of the merge. */
function repark(p: PoolCore, slot: number): void {
  const seg = p.segments[p.blocks.segment[slot]!]!;
  const size = p.blocks.size[slot]!;
  p.counters.freed(seg.small, size, size >= p.maxSplitSize, false);
  parkFigures(p, slot, seg);
}

/**
 * The hot cycle's allocation: parked block {@link PoolCore.hot} of `seg`, freed by the last call to
 * the pool and asked for again with the request that took it before (its `requested` bytes, on its
 * segment's stream and owner). Nothing has changed since that take, so its checks hold as they did;
 * the block keeps its address-table entry. Returns its address.
 */
export function retakeHot(p: PoolCore, seg: Segment): number {
  const slot = p.hot;
  const b = p.blocks;
  if (p.hotPhase === HotPhase.Counted) {
    p.parked = NIL;
    b.state[slot] = BlockState.Allocated;
    p.hotCycles++;
    return b.address[slot]!;
  }
  retake(p, seg, slot, b.requested[slot]!);
  if (p.hotPhase === HotPhase.Measure) {
    p.counters.endCycle();
    p.hotPhase = HotPhase.Counted;
  } else if (p.hotPhase === HotPhase.Armed) {
    // The request came back: a loop, whose next cycle is measured and the ones after it counted.
    p.hotPhase = HotPhase.Mark;
  }
  return b.address[slot]!;
}

/**
 * Ends the hot cycle, if any, before a call other than its repeat: a parked hot block's stale
 * address-table entry goes, and the block is then parked as any other.
 */
export function coolHot(p: PoolCore): void {
  const slot = p.hot;
  if (slot === NIL) return;
  p.hot = NIL;
  if (p.hotCycles > 0) {
    p.counters.repeatCycle(p.hotCycles);
    p.hotCycles = 0;
  }
  if (slot === p.parked) {
    p.live.take(p.blocks.address[slot]!);
    // A counted cycle's free owes its figures: the same as the measured one's, so no peak rises.
    if (p.hotPhase === HotPhase.Counted) repark(p, slot);
  }
}

/** Carries out the parked block's merge, if any: the pool is then as PyTorch has it. */
export function settleParked(p: PoolCore): void {
  coolHot(p);
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
