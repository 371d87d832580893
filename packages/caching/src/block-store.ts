/**
 * The pool's blocks in parallel typed arrays (structure of arrays): a block is a slot index. Blocks
 * of one segment are linked in address order by `prev`/`next`, which end at the segment's edges, so
 * a freed block finds the neighbours it may merge with in O(1) and "prev and next are both NIL"
 * means the block is a whole segment. Removed slots go on a spare list; the arrays double when full.
 */

import { growFloat, growInt, NIL } from '@allot/blocks';

/** "No block" (the same sentinel as the free-block index's). */
export { NIL };

/** Life of a block. */
export const BlockState = {
  /** The slot holds no block. */
  Unused: 0,
  /** Cached: free for reuse, in a free-block index. */
  Free: 1,
  /** Handed out and not yet freed. */
  Allocated: 2,
  /** Freed by the caller, waiting for streams that used it (PyTorch's `active_pending_free`). */
  PendingFree: 3,
} as const;
export type BlockState = (typeof BlockState)[keyof typeof BlockState];

const INITIAL_SLOTS = 256;

export class BlockStore {
  /** First byte of each block. */
  address = new Float64Array(INITIAL_SLOTS);
  /** Size in bytes. */
  size = new Float64Array(INITIAL_SLOTS);
  /** Bytes the caller asked for (allocated and pending blocks). */
  requested = new Float64Array(INITIAL_SLOTS);
  /** Free-block searches of the block's pool when it was cached (garbage-collection age). */
  gcBase = new Float64Array(INITIAL_SLOTS);
  /** Previous block of the same segment, or {@link NIL}. */
  prev = new Int32Array(INITIAL_SLOTS);
  /** Next block of the same segment, or {@link NIL}; for spare slots, the next spare. */
  next = new Int32Array(INITIAL_SLOTS);
  /** Segment id of each block. */
  segment = new Int32Array(INITIAL_SLOTS);
  /** Stream events still outstanding before a pending free completes. */
  events = new Int32Array(INITIAL_SLOTS);
  /** {@link BlockState} of each slot. */
  state = new Uint8Array(INITIAL_SLOTS);
  private spare = NIL;
  private used = 0;

  /** A fresh slot (state Unused, fields stale: the caller sets them). */
  take(): number {
    const s = this.spare;
    if (s !== NIL) {
      this.spare = this.next[s]!;
      return s;
    }
    if (this.used === this.state.length) this.grow();
    return this.used++;
  }

  /** Recycles `slot`. */
  recycle(slot: number): void {
    this.state[slot] = BlockState.Unused;
    this.next[slot] = this.spare;
    this.spare = slot;
  }

  /** Forgets every block. */
  clear(): void {
    this.state.fill(BlockState.Unused, 0, this.used);
    this.spare = NIL;
    this.used = 0;
  }

  private grow(): void {
    const n = this.state.length * 2;
    this.address = growFloat(this.address, n);
    this.size = growFloat(this.size, n);
    this.requested = growFloat(this.requested, n);
    this.gcBase = growFloat(this.gcBase, n);
    this.prev = growInt(this.prev, n);
    this.next = growInt(this.next, n);
    this.segment = growInt(this.segment, n);
    this.events = growInt(this.events, n);
    const state = new Uint8Array(n);
    state.set(this.state);
    this.state = state;
  }
}
