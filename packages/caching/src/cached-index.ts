/**
 * The cached (free) blocks of the pool: each owner keeps one ordered index per pool (small, large)
 * and stream, keyed (size, address), and the pool's figures follow every block that enters or
 * leaves one (cached bytes and blocks, and the inactive-split figures for blocks of split segments).
 *
 * A block whose key changes is rekeyed in place while its order among its neighbours holds, so a
 * split or a merge on the hot path neither removes nor inserts.
 */
import { NIL, type OrderedIndex } from '@allot/blocks';
import type { PoolCore } from './pool-core';
import type { FreeLists, PoolOwner } from './pool-owner';
import type { Stream } from './stream-source';

/**
 * Gives cached block `id` the smaller key (size, address): in place when its predecessor still sorts
 * before it (the order after it cannot change), else by removal and insertion.
 */
export function shrinkKey(index: OrderedIndex, id: number, size: number, address: number): void {
  const before = index.predecessor(id);
  if (before !== NIL) {
    const p = index.primary(before);
    if (p > size || (p === size && index.secondary(before) > address)) {
      index.remove(id);
      index.insert(id, size, address, size);
      return;
    }
  }
  index.updateInPlace(id, size, address, size);
}

/**
 * Gives cached block `id` the larger key (size, address): in place when its successor still sorts
 * after it, else by removal and insertion.
 */
export function growKey(index: OrderedIndex, id: number, size: number, address: number): void {
  const after = index.successor(id);
  if (after !== NIL) {
    const p = index.primary(after);
    if (p < size || (p === size && index.secondary(after) < address)) {
      index.remove(id);
      index.insert(id, size, address, size);
      return;
    }
  }
  index.updateInPlace(id, size, address, size);
}

/** Adds a free block to its index, with the cached and inactive-split figures. */
export function indexBlock(
  p: PoolCore,
  owner: PoolOwner,
  lists: FreeLists,
  stream: Stream,
  slot: number,
): void {
  const b = p.blocks;
  const size = b.size[slot]!;
  b.gcBase[slot] = lists.searches;
  lists.index(stream).insert(slot, size, b.address[slot]!, size);
  recache(p, owner, lists.small, false, -1, isSplit(p, slot), size);
}

/** Removes a free block from its index, with the cached and inactive-split figures. */
export function unindexBlock(
  p: PoolCore,
  owner: PoolOwner,
  small: boolean,
  index: OrderedIndex,
  slot: number,
): void {
  index.remove(slot);
  recache(p, owner, small, isSplit(p, slot), p.blocks.size[slot]!, false, -1);
}

/** Whether `slot` is part of a split segment (an expandable segment's blocks never count). */
export function isSplit(p: PoolCore, slot: number): boolean {
  const b = p.blocks;
  return !b.isWhole(slot) && !p.segments[b.segment[slot]!]!.expandable;
}

/**
 * Cached and inactive-split figures: a cached block of `removed` bytes leaves the cache and one of
 * `added` bytes enters it (each negative when none), for the pool and the block's owner.
 */
export function recache(
  p: PoolCore,
  owner: PoolOwner,
  small: boolean,
  removedSplit: boolean,
  removed: number,
  addedSplit: boolean,
  added: number,
): void {
  p.counters.recached(small, removedSplit, removed, addedSplit, added);
  if (owner.counters !== null)
    owner.counters.recached(small, removedSplit, removed, addedSplit, added);
}
