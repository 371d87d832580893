/**
 * FitAllocator: the placement engine shared by first fit, next fit, best fit, good fit and worst
 * fit. It manages one range `[base, base + capacity)` with all bookkeeping outside it.
 *
 * - The {@link BlockTable} holds every block in address order; an {@link AddressMap} finds a live
 *   block by its granule index (`(address − base) / granule`, an exact integer for every block
 *   start), so the lookup hashes one small integer, never a float address.
 * - A strategy's {@link FreeIndex} files the free blocks and picks one for each request.
 * - The free block at the end of the range, when there is one (the "top", dlmalloc's wilderness),
 *   is kept out of the index: the index weighs it against its own pick by the strategy's rule
 *   (first fit takes it last, as the highest address; best fit when it is the smallest that fits),
 *   so placement is exactly as if it were filed. A split of the top, or a free that merges into
 *   it, then touches no index at all: the commonest pair there is costs no search-structure work.
 * - Sizes are rounded up to the granule (the minimum alignment), so every block boundary stays on a
 *   granule and default-aligned requests never pad. A larger alignment pads the front of the chosen
 *   block; the padding stays a free block.
 * - A block is split exactly (no minimum remainder): bookkeeping lives outside the range, so any
 *   remainder is usable. Freeing coalesces with both neighbours at once, so no two free blocks are
 *   ever adjacent.
 * - Compaction is a plan the caller carries out: live blocks slide toward `base` in address order,
 *   each move a (from, to, size) copy with memmove semantics; {@link FitAllocator.applyCompaction}
 *   then rewrites the bookkeeping.
 *
 * ```
 *  allocate(48, 64) from a free block at 0x1010 of 256 bytes, granule 16:
 *
 *  0x1010      0x1040           0x1070                       0x1110
 *  ├─ padding ─┼── live (48) ───┼──────── remainder ─────────┤
 *     free                              free (keeps the slot)
 * ```
 *
 * Steady-state operations allocate no objects: the table and indices grow by doubling.
 */
import type { Allocator, Layout, LayoutBlock, Usage } from '@allot/core';
import { InvalidArgumentError } from '@allot/core';
import { FREE, LIVE, NIL } from './constants';
import { FitEngine } from './fit-engine';
import { paddingFor } from './free-index';

export { DEFAULT_ALIGNMENT, type FitOptions } from './fit-engine';

/** One step of a compaction plan: copy `size` bytes from `from` to `to` (ranges may overlap). */
export interface CompactionMove {
  /** Current address of the live block. */
  readonly from: number;
  /** Address it moves to (lower than `from`). */
  readonly to: number;
  /** Bytes to copy: the block's usable size. */
  readonly size: number;
}

/** Moves that slide live blocks toward the start of the range; carry them out in order. */
export interface CompactionPlan {
  readonly moves: readonly CompactionMove[];
  /** Sum of the moves' sizes, in bytes. */
  readonly movedBytes: number;
  /** State the plan was made for; {@link FitAllocator.applyCompaction} refuses a stale plan. */
  readonly generation: number;
}

export interface CompactOptions {
  /** Most moves in the plan. @defaultValue Infinity */
  readonly maxMoves?: number;
  /** Most bytes the plan may copy. @defaultValue Infinity */
  readonly maxBytes?: number;
}

export class FitAllocator extends FitEngine implements Allocator {
  usableSize(address: number): number {
    const b = this.slotOf(address);
    if (b === NIL) throw new InvalidArgumentError('address', address, 'the start of a live block');
    return this.table.size[b]!;
  }

  /** Bytes the caller asked for when it allocated the live block at `address`. */
  requestedSize(address: number): number {
    const b = this.slotOf(address);
    if (b === NIL) throw new InvalidArgumentError('address', address, 'the start of a live block');
    return this.table.requested[b]!;
  }

  owns(address: number): boolean {
    return this.slotOf(address) !== NIL;
  }

  usage(): Usage {
    return {
      capacity: this.capacity,
      allocatedBytes: this.allocatedBytes,
      freeBytes: this.capacity - this.allocatedBytes,
      overheadBytes: 0,
      largestFreeBlock: Math.max(
        this.index.largest(),
        this.top === NIL ? 0 : this.table.size[this.top]!,
      ),
      liveCount: this.live.size + (this.pendingKey >= 0 ? 1 : 0),
      freeBlockCount: this.freeBlocks,
    };
  }

  layout(): Layout {
    const t = this.table;
    const blocks: LayoutBlock[] = [];
    for (let b = t.head; b !== NIL; b = t.next[b]!) {
      const free = t.state[b] === FREE;
      blocks.push(
        free
          ? { address: t.address[b]!, size: t.size[b]!, free }
          : {
              address: t.address[b]!,
              size: t.size[b]!,
              free,
              requestedSize: t.requested[b]!,
            },
      );
    }
    return { segments: [{ address: this.base, size: this.capacity, blocks }] };
  }

  /**
   * Plans moves that slide live blocks toward the start of the range, in address order, each to
   * the lowest address its alignment allows. Changes nothing: carry the moves out in order (each a
   * memmove), then call {@link FitAllocator.applyCompaction}. Repeated full passes leave one free
   * block when every block has the minimum alignment (larger alignments may keep small gaps).
   *
   * @throws InvalidArgumentError when a limit is negative or not a number.
   */
  compact(options: CompactOptions = {}): CompactionPlan {
    const maxMoves = options.maxMoves ?? Number.POSITIVE_INFINITY;
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    if (!(maxMoves >= 0)) {
      throw new InvalidArgumentError('maxMoves', maxMoves, 'a non-negative number');
    }
    if (!(maxBytes >= 0)) {
      throw new InvalidArgumentError('maxBytes', maxBytes, 'a non-negative number');
    }
    const t = this.table;
    const moves: CompactionMove[] = [];
    let movedBytes = 0;
    let cursor = this.base;
    for (let b = t.head; b !== NIL; b = t.next[b]!) {
      if (t.state[b] !== LIVE) continue;
      const from = t.address[b]!;
      const size = t.size[b]!;
      const to = cursor + paddingFor(cursor, t.alignment[b]!);
      if (to < from) {
        if (moves.length >= maxMoves || movedBytes + size > maxBytes) break;
        moves.push({ from, to, size });
        movedBytes += size;
        cursor = to + size;
      } else {
        cursor = from + size;
      }
    }
    return { moves, movedBytes, generation: this.generationCount };
  }

  /**
   * Records that the moves of `plan` were carried out: the moved blocks now live at their new
   * addresses and the free ranges between blocks are rebuilt (coalesced).
   *
   * @throws InvalidArgumentError when the plan was not made by {@link FitAllocator.compact} for the
   * current state. State is unchanged.
   */
  applyCompaction(plan: CompactionPlan): void {
    if (plan === null || typeof plan !== 'object' || plan.generation !== this.generationCount) {
      throw new InvalidArgumentError(
        'plan',
        plan?.generation,
        `a plan from compact() for the current state (generation ${this.generationCount})`,
      );
    }
    const t = this.table;
    const moved = new Map<number, number>();
    for (const move of plan.moves) {
      const b = this.slotOf(move?.from);
      if (b === NIL || t.size[b] !== move.size || moved.has(b)) {
        throw new InvalidArgumentError('plan', move, 'moves of live blocks as compact() made them');
      }
      moved.set(b, move.to);
    }
    if (moved.size === 0) return;
    // Live blocks keep their address order; collect them with their new addresses, then rebuild.
    const count = this.live.size + (this.pendingKey >= 0 ? 1 : 0);
    const address = new Float64Array(count);
    const size = new Float64Array(count);
    const requested = new Float64Array(count);
    const alignment = new Float64Array(count);
    let i = 0;
    for (let b = t.head; b !== NIL; b = t.next[b]!) {
      if (t.state[b] !== LIVE) continue;
      address[i] = moved.get(b) ?? t.address[b]!;
      size[i] = t.size[b]!;
      requested[i] = t.requested[b]!;
      alignment[i] = t.alignment[b]!;
      i++;
    }
    this.live.clear();
    this.pendingKey = Number.NaN;
    this.index.clear();
    t.clear();
    this.top = NIL;
    this.freeBlocks = 0;
    let last = NIL;
    let cursor = this.base;
    for (let j = 0; j < count; j++) {
      const a = address[j]!;
      if (a > cursor) last = this.appendFree(last, cursor, a - cursor, true);
      last = t.insertAfter(last, a, size[j]!, LIVE);
      t.requested[last] = requested[j]!;
      t.alignment[last] = alignment[j]!;
      this.live.set(this.keyOf(a), last);
      cursor = a + size[j]!;
    }
    if (this.end > cursor) this.top = this.appendFree(last, cursor, this.end - cursor, false);
    this.generationCount++;
  }

  /** Adds a free block after `after`; files it in the index when `filed` (not the top). */
  protected appendFree(after: number, address: number, size: number, filed: boolean): number {
    const b = this.table.insertAfter(after, address, size, FREE);
    if (filed) this.index.insert(b);
    this.freeBlocks++;
    return b;
  }
}
