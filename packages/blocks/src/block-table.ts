/**
 * Address-ordered block table: every block of a range, free or live, in parallel typed arrays.
 *
 * A block is a slot index. Its address, size, requested size and alignment live in Float64Arrays
 * (exact up to 2^53); `prev`/`next` link the blocks in address order, so a freed block finds both
 * neighbours in O(1) for coalescing. Slots of removed blocks are kept on a spare list and reused;
 * the arrays double when they run out, so steady-state work allocates nothing.
 *
 * ```
 *  slot:     3        0          5        1
 *          ┌──────┬──────────┬────────┬────────┐
 *  range:  │ live │   free   │  live  │  free  │
 *          └──────┴──────────┴────────┴────────┘
 *  next:   3 → 0 → 5 → 1 → NIL        (head = 3, tail = 1)
 * ```
 */

import { FREE, LIVE, NIL, UNUSED } from './constants';

export { NIL };

/** State of a slot. */
export const BlockState = {
  /** The slot holds no block (it is on the spare list). */
  Unused: UNUSED,
  /** A free range. */
  Free: FREE,
  /** A live (allocated) block. */
  Live: LIVE,
} as const;
export type BlockState = (typeof BlockState)[keyof typeof BlockState];

/** Slots a table starts with; it doubles from there. */
const INITIAL_SLOTS = 64;

export class BlockTable {
  // The arrays are `declare`d and assigned in the constructor (no `undefined` first).
  /** First byte of each block. */
  declare address: Float64Array;
  /** Size of each block, in bytes. */
  declare size: Float64Array;
  /** Bytes the caller asked for (live blocks). */
  declare requested: Float64Array;
  /** Alignment the block was allocated with, in bytes (live blocks). */
  declare alignment: Float64Array;
  /** Previous block by address, or {@link NIL}. */
  declare prev: Int32Array;
  /** Next block by address, or {@link NIL}; for unused slots, the next spare slot. */
  declare next: Int32Array;
  /** {@link BlockState} of each slot. */
  declare state: Uint8Array;
  /** Lowest-address block, or {@link NIL} when the table is empty. */
  head = NIL;
  /** Highest-address block, or {@link NIL}. */
  tail = NIL;
  /** Number of blocks (free and live). */
  count = 0;
  private spare = NIL;
  private used = 0;

  /** @param initialSlots - slots to reserve up front. @defaultValue 64 */
  constructor(initialSlots: number = INITIAL_SLOTS) {
    const n = Math.max(4, Math.floor(initialSlots));
    this.address = new Float64Array(n);
    this.size = new Float64Array(n);
    this.requested = new Float64Array(n);
    this.alignment = new Float64Array(n);
    this.prev = new Int32Array(n);
    this.next = new Int32Array(n);
    this.state = new Uint8Array(n);
  }

  /** Number of slots the arrays hold now. */
  get slots(): number {
    return this.state.length;
  }

  /** Forgets every block. Keeps the arrays. */
  clear(): void {
    this.state.fill(UNUSED, 0, this.used);
    this.head = NIL;
    this.tail = NIL;
    this.count = 0;
    this.spare = NIL;
    this.used = 0;
  }

  /** Makes the table one block `[address, address + size)` in `state`; returns its slot. */
  reset(address: number, size: number, state: BlockState): number {
    this.clear();
    const b = this.take();
    this.address[b] = address;
    this.size[b] = size;
    this.state[b] = state;
    this.prev[b] = NIL;
    this.next[b] = NIL;
    this.head = b;
    this.tail = b;
    this.count = 1;
    return b;
  }

  /** Adds a block right after `after` in address order (`NIL`: at the head); returns its slot. */
  insertAfter(after: number, address: number, size: number, state: BlockState): number {
    const b = this.take();
    this.address[b] = address;
    this.size[b] = size;
    this.state[b] = state;
    const n = after === NIL ? this.head : this.next[after]!;
    this.prev[b] = after;
    this.next[b] = n;
    if (after === NIL) this.head = b;
    else this.next[after] = b;
    if (n === NIL) this.tail = b;
    else this.prev[n] = b;
    this.count++;
    return b;
  }

  /** Adds a block right before `before` in address order; returns its slot. */
  insertBefore(before: number, address: number, size: number, state: BlockState): number {
    // Written out (not through insertAfter): the hot path of every split.
    let b = this.spare;
    if (b !== NIL) this.spare = this.next[b]!;
    else b = this.fresh();
    const p = this.prev[before]!;
    this.address[b] = address;
    this.size[b] = size;
    this.state[b] = state;
    this.prev[b] = p;
    this.next[b] = before;
    this.prev[before] = b;
    if (p === NIL) this.head = b;
    else this.next[p] = b;
    this.count++;
    return b;
  }

  /** Removes block `b` from the address order and recycles its slot. */
  unlink(b: number): void {
    const p = this.prev[b]!;
    const n = this.next[b]!;
    if (p === NIL) this.head = n;
    else this.next[p] = n;
    if (n === NIL) this.tail = p;
    else this.prev[n] = p;
    this.state[b] = UNUSED;
    this.next[b] = this.spare;
    this.spare = b;
    this.count--;
  }

  /** The block whose range holds `address`, or {@link NIL}. O(n): for diagnostics only. */
  containing(address: number): number {
    for (let b = this.head; b !== NIL; b = this.next[b]!) {
      const start = this.address[b]!;
      if (address >= start && address < start + this.size[b]!) return b;
    }
    return NIL;
  }

  private take(): number {
    const s = this.spare;
    if (s !== NIL) {
      this.spare = this.next[s]!;
      return s;
    }
    return this.fresh();
  }

  /** A slot never used before, the arrays grown when they are full. */
  private fresh(): number {
    if (this.used === this.state.length) this.grow();
    return this.used++;
  }

  private grow(): void {
    const n = this.state.length * 2;
    this.address = growFloat(this.address, n);
    this.size = growFloat(this.size, n);
    this.requested = growFloat(this.requested, n);
    this.alignment = growFloat(this.alignment, n);
    this.prev = growInt(this.prev, n);
    this.next = growInt(this.next, n);
    const state = new Uint8Array(n);
    state.set(this.state);
    this.state = state;
  }
}

/** A Float64Array of `length` elements starting with a copy of `from`. */
export function growFloat(from: Float64Array, length: number): Float64Array<ArrayBuffer> {
  const to = new Float64Array(length);
  to.set(from);
  return to;
}

/** An Int32Array of `length` elements starting with a copy of `from`. */
export function growInt(from: Int32Array, length: number): Int32Array<ArrayBuffer> {
  const to = new Int32Array(length);
  to.set(from);
  return to;
}
