/**
 * Expandable segments (`expandable_segments:True` over a source that can `grow`): the pool keeps one
 * segment per pool (small, large) and stream and grows it in place, in 2 MiB (small) or 20 MiB
 * (large) pages, instead of acquiring a new segment on each miss.
 *
 * ```
 *  ┌──────────── mapped (grown so far) ────────────┬─ unmapped: room to grow ─ ─ ─ ─ ─ ─ ┐
 *  │ live │ free │ live │ live │ free (the tail)  │                                     │
 *  └──────────────────────────────────────────────┴─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ┘
 * ```
 *
 * Best fit among expandable blocks is PyTorch's: the free tail counts as its size plus the address
 * space it can still grow into ({@link preferMapped}), so a fitting block elsewhere is used first.
 */
import { NIL, type OrderedIndex } from '@allot/blocks';
import { alignUp } from '@allot/core';
import { BlockState } from './block-store';
import { unindexBlock } from './cached-index';
import { LARGE_BUFFER, MIN_BLOCK_SIZE, SMALL_BUFFER } from './constants';
import type { PoolCore } from './pool-core';
import { addSegment } from './segments';
import type { Stream } from './stream-source';
import { countGrowth, mapIntoHole, NO_HOLE } from './unmapped-pages';

/**
 * Address space an expandable segment can still grow into, as best fit weighs it: far more than any
 * block (PyTorch reserves the device's whole memory per expandable segment).
 */
const UNMAPPED_REACH = 2 ** 50;

/** Size of block `slot` as best fit weighs it: an expandable segment's tail adds its reach. */
function reach(p: PoolCore, slot: number): number {
  const b = p.blocks;
  const seg = p.segments[b.segment[slot]!]!;
  return seg.expandable && seg.tail === slot ? b.size[slot]! + UNMAPPED_REACH : b.size[slot]!;
}

/**
 * PyTorch's best fit among expandable blocks: a free block at the growing end of an expandable
 * segment counts as its size plus the address space it can still grow into, so the search moves on
 * from it to larger blocks that are "smaller" by that measure. The end stays free to grow, and a
 * fitting block elsewhere is used first (`get_free_block`, `expandable_size`).
 */
export function preferMapped(p: PoolCore, index: OrderedIndex, found: number): number {
  const b = p.blocks;
  let id = found;
  let next = index.successor(id);
  while (next !== NIL && p.segments[b.segment[id]!]!.expandable && reach(p, next) < reach(p, id)) {
    id = next;
    next = index.successor(id);
  }
  return id;
}

/**
 * Grows the expandable segment of (pool, stream) in place, or starts a new one. Returns a free,
 * unindexed block of at least `rounded` bytes past its alignment, or NIL.
 */
export function growExpandable(
  p: PoolCore,
  small: boolean,
  stream: Stream,
  rounded: number,
  align: number,
  padding: number,
): number {
  const page = small ? SMALL_BUFFER : LARGE_BUFFER;
  const byStream = small ? p.expandableSmall : p.expandableLarge;
  const seg = byStream.get(stream);
  const b = p.blocks;
  if (seg !== undefined) {
    // Holes left by unmapping under pressure come first, lowest address first, as in PyTorch.
    const hole = align <= MIN_BLOCK_SIZE ? mapIntoHole(p, seg, rounded) : NO_HOLE;
    if (hole !== NO_HOLE) return hole;
    const end = seg.address + seg.size;
    const tail = seg.tail;
    const tailFree = b.state[tail] === BlockState.Free;
    const start = alignUp(tailFree ? b.address[tail]! : end, align);
    const need = Math.max(0, start + rounded - end);
    const grown = need === 0 || p.source.grow!(seg.region, seg.size + alignUp(need, page));
    if (grown) {
      const added = seg.region.size - seg.size;
      if (added > 0) countGrowth(p, seg, end, added);
      if (tailFree) {
        const lists = small ? p.main.small : p.main.large;
        unindexBlock(p, seg.owner, small, lists.find(stream)!, tail);
        b.size[tail]! += added;
        return tail;
      }
      return b.insertAfter(seg, tail, end, added, BlockState.Free);
    }
  }
  const region = p.source.acquire(alignUp(rounded + padding, page));
  if (region === null) return NIL;
  const fresh = addSegment(p, region, p.main, small, stream, true);
  byStream.set(stream, fresh);
  return fresh.head;
}
