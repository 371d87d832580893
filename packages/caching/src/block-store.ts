/**
 * The pool's blocks in parallel typed arrays (structure of arrays): a block is a slot index. Blocks
 * of one segment are linked in address order by `prev`/`next`, which end at the segment's edges, so
 * a freed block finds the neighbours it may merge with in O(1) and "prev and next are both NIL"
 * means the block is a whole segment. Removed slots go on a spare list; the arrays double when full.
 *
 * ```
 *  segment A: head ─► 4 ─► 0 ─► 7 ◄─ tail      segment B: head ─► 2 ◄─ tail
 *             ┌──────┬──────┬──────┐                       ┌──────────────┐
 *             │ live │ free │ live │                       │     free     │
 *             └──────┴──────┴──────┘                       └──────────────┘
 *  split: a block becomes two neighbours;  merge: a block absorbs a neighbour, whose slot is recycled
 * ```
 *
 * Why not `@allot/blocks`' `BlockTable`: it links the blocks of one range with one head and tail,
 * where the pool links many segments in one slot space (the free-block indices key blocks by slot
 * across segments) and keeps more per block (segment, stream events, garbage-collection age, a
 * pending-free state). The list operations are the same: every re-linking goes through
 * {@link BlockStore.insertAfter}, {@link BlockStore.split}, {@link BlockStore.splitFront},
 * {@link BlockStore.absorbNext} and {@link BlockStore.absorbPrevious}.
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
  /**
   * Freed by the caller, its merge into the cached block after it put off (see `parked-free.ts`):
   * counted as merged, not yet merged. At most one block, and never seen outside the hot path.
   */
  Parked: 4,
  /**
   * Address space of an expandable segment whose pages were unmapped under memory pressure: neither
   * free nor reserved, mapped again when a request needs the room (see `unmapped-pages.ts`).
   */
  Unmapped: 5,
} as const;
export type BlockState = (typeof BlockState)[keyof typeof BlockState];

const INITIAL_SLOTS = 256;

/** Where a segment's block list begins and ends (the segment itself). */
export interface BlockChain {
  /** Segment id stored in each block. */
  readonly id: number;
  /** Lowest-address block. */
  head: number;
  /** Highest-address block. */
  tail: number;
}

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

  /** Makes `chain` one block `[address, address + size)` in `state`; returns its slot. */
  first(chain: BlockChain, address: number, size: number, state: BlockState): number {
    const slot = this.take();
    this.place(chain, slot, address, size, state);
    this.prev[slot] = NIL;
    this.next[slot] = NIL;
    chain.head = slot;
    chain.tail = slot;
    return slot;
  }

  /** Adds a block `[address, address + size)` right after `after` in `chain`; returns its slot. */
  insertAfter(
    chain: BlockChain,
    after: number,
    address: number,
    size: number,
    state: BlockState,
  ): number {
    const slot = this.take();
    this.place(chain, slot, address, size, state);
    const next = this.next[after]!;
    this.prev[slot] = after;
    this.next[slot] = next;
    this.next[after] = slot;
    if (next === NIL) chain.tail = slot;
    else this.prev[next] = slot;
    return slot;
  }

  /**
   * Splits the first `size` bytes of block `slot` off into a new block in front of it, in `state`;
   * `slot` keeps the rest (its address moves up). Returns the new block.
   *
   * On the hot path (a cache hit that splits): written out in full, without {@link take} and
   * {@link place}, so that inlining it costs the caller as little of the compiler's budget as can be.
   */
  splitFront(chain: BlockChain, slot: number, size: number, state: BlockState): number {
    let front = this.spare;
    if (front !== NIL) this.spare = this.next[front]!;
    else {
      if (this.used === this.state.length) this.grow();
      front = this.used++;
    }
    const address = this.address[slot]!;
    const before = this.prev[slot]!;
    this.address[front] = address;
    this.size[front] = size;
    this.segment[front] = chain.id;
    this.events[front] = 0;
    this.state[front] = state;
    this.prev[front] = before;
    this.next[front] = slot;
    if (before === NIL) chain.head = front;
    else this.next[before] = front;
    this.prev[slot] = front;
    this.address[slot] = address + size;
    this.size[slot]! -= size;
    return front;
  }

  /**
   * Splits block `slot` after its first `size` bytes: the rest becomes a new block behind it, in
   * `state`. Returns the new block.
   */
  split(chain: BlockChain, slot: number, size: number, state: BlockState): number {
    const rest = this.size[slot]! - size;
    this.size[slot] = size;
    return this.insertAfter(chain, slot, this.address[slot]! + size, rest, state);
  }

  /** Block `slot` absorbs the block after it, whose slot is recycled. */
  absorbNext(chain: BlockChain, slot: number): void {
    const next = this.next[slot]!;
    const after = this.next[next]!;
    this.size[slot]! += this.size[next]!;
    this.next[slot] = after;
    if (after === NIL) chain.tail = slot;
    else this.prev[after] = slot;
    this.recycle(next);
  }

  /** Block `slot` absorbs the block before it (taking its address), whose slot is recycled. */
  absorbPrevious(chain: BlockChain, slot: number): void {
    const prev = this.prev[slot]!;
    const before = this.prev[prev]!;
    this.address[slot] = this.address[prev]!;
    this.size[slot]! += this.size[prev]!;
    this.prev[slot] = before;
    if (before === NIL) chain.head = slot;
    else this.next[before] = slot;
    this.recycle(prev);
  }

  /**
   * Block `slot` becomes `size` bytes and the block after it starts right behind it, taking up the
   * difference: what merging the two and splitting `size` bytes off the front would leave, with no
   * slot recycled or taken. The caller checks that the block after is large enough.
   */
  moveBoundary(slot: number, size: number): void {
    const next = this.next[slot]!;
    this.size[next]! += this.size[slot]! - size;
    this.size[slot] = size;
    this.address[next] = this.address[slot]! + size;
  }

  /** Whether `slot` is the only block of its segment. */
  isWhole(slot: number): boolean {
    return this.prev[slot] === NIL && this.next[slot] === NIL;
  }

  /** Recycles `slot` (the last block of a segment given back; merges recycle their own). */
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

  /** A fresh slot (state Unused, fields stale: the caller sets them). */
  private take(): number {
    const s = this.spare;
    if (s !== NIL) {
      this.spare = this.next[s]!;
      return s;
    }
    if (this.used === this.state.length) this.grow();
    return this.used++;
  }

  /** Fills the fields of a fresh block of `chain` (links aside). */
  private place(
    chain: BlockChain,
    slot: number,
    address: number,
    size: number,
    state: BlockState,
  ): void {
    this.address[slot] = address;
    this.size[slot] = size;
    this.segment[slot] = chain.id;
    this.events[slot] = 0;
    this.state[slot] = state;
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
