/**
 * Address tree: first fit's index of free blocks, a B+tree in typed arrays keyed by address alone
 * whose internal entries also hold the largest size below them. It answers the one question first
 * fit asks, "the lowest address at or after `from` whose size is ≥ `need`", in O(log n) by skipping
 * every subtree whose largest size is too small.
 *
 * It is `OrderedTree` of `@allot/blocks` cut down to that question, because the question is asked
 * on every allocation and the block's entry changes on nearly every call:
 *
 * - One key per entry (an address; free blocks never share one), so a comparison is one load.
 * - A node's level is known on the way down (the root's height, less one per step), so a descent
 *   reads no per-node leaf flag; leaves are not chained (a search that runs off a leaf climbs).
 * - Per entry: key, size (a leaf's block size, an internal entry's largest size below) and ref (the
 *   block, or the child node), each in one array, nodes `2^shift` entries apart.
 * - Per block: its leaf and slot, so removal and in-place updates go straight to the entry; the
 *   smallest key and largest size above it are refreshed upward only while they change (a size that
 *   shrinks below its parent's maximum costs nothing, one that was the maximum rescans one node).
 * - A full node splits in two; an emptied node is unlinked, and a node under a quarter full merges
 *   with a neighbour when both fit in half a node; a root with one child gives way to it. So the
 *   height is O(log n) in the blocks filed now, whatever was filed before.
 *
 * Nodes live in arrays that double on demand and are recycled through a spare list: steady-state
 * work allocates nothing. Keys are doubles, exact up to 2^53; sizes are integers below 2^52.
 *
 * ```
 *  internal      [ 0x000 max 96 | 0x300 max 512 ]          smallest key and largest size per child
 *                   /                     \
 *  leaves   [ 0x000 96 | 0x180 24 ]   [ 0x300 8 | 0x400 512 ]    address and size per block
 * ```
 */
import { NIL } from '@allot/blocks';
import { AddressNodes } from './address-nodes';

export class AddressTree extends AddressNodes {
  /** Blocks filed. */
  get count(): number {
    return this.entries;
  }

  /** Whether block `id` is filed. */
  has(id: number): boolean {
    return id >= 0 && id < this.leafOf.length && this.leafOf[id] !== NIL;
  }

  /** Largest size filed, in bytes (0 when none). O(width). */
  largest(): number {
    return this.entries === 0 ? 0 : this.nodeMax(this.root);
  }

  /** Unfiles every block. Keeps the arrays. */
  clear(): void {
    this.leafOf.fill(NIL);
    this.reset();
  }

  /** Files block `id` at `address` with `size` bytes. `id` must not be filed, nor `address` taken. */
  insert(id: number, address: number, size: number): void {
    if (id >= this.leafOf.length) this.growIds(id + 1);
    const s = this.shift;
    const keys = this.keys;
    let x = this.root;
    // The last child whose smallest key is below the address (the first child when none is).
    for (let h = this.height; h > 0; h--) {
      const base = x << s;
      let i = this.counts[x]! - 1;
      while (i > 0 && keys[base + i]! > address) i--;
      x = this.refs[base + i]!;
    }
    if (this.counts[x] === this.width) {
      const y = this.split(x);
      if (this.keys[y << s]! < address) x = y;
    }
    // A split may have grown the arrays: read them again.
    const at = this.keys;
    const base = x << s;
    let pos = this.counts[x]!;
    while (pos > 0 && at[base + pos - 1]! > address) pos--;
    this.open(x, pos);
    const e = base + pos;
    at[e] = address;
    this.sizes[e] = size;
    this.refs[e] = id;
    this.leafOf[id] = x;
    this.slotOf[id] = pos;
    this.entries++;
    if (pos === 0) this.fixKey(x);
    this.raiseMax(x, size);
  }

  /** Unfiles block `id`, which must be filed. */
  remove(id: number): void {
    const x = this.leafOf[id]!;
    this.leafOf[id] = NIL;
    this.entries--;
    this.drop(x, this.slotOf[id]!);
  }

  /**
   * Block `id` now starts at `address` with `size` bytes; the caller guarantees its address order
   * among the filed blocks is unchanged (it shrank from either end, or grew over live neighbours).
   */
  update(id: number, address: number, size: number): void {
    const x = this.leafOf[id]!;
    const pos = this.slotOf[id]!;
    const e = (x << this.shift) + pos;
    const old = this.sizes[e]!;
    this.sizes[e] = size;
    if (pos === 0 && this.keys[e] !== address) {
      this.keys[e] = address;
      this.fixKey(x);
    } else {
      this.keys[e] = address;
    }
    if (size > old) this.raiseMax(x, size);
    else if (size < old) this.lowerMax(x, old);
  }

  /** Lowest-address block whose size is ≥ `need`, or {@link NIL}. */
  first(need: number): number {
    const x = this.root;
    const sizes = this.sizes;
    const base = x << this.shift;
    const end = base + this.counts[x]!;
    let e = base;
    while (e < end && sizes[e]! < need) e++;
    // Maxima are exact: only the root can hold nothing large enough, and below it the search
    // needs no bound.
    if (e === end) return NIL;
    return this.height === 0 ? this.refs[e]! : this.leftmost(this.refs[e]!, this.height - 1, need);
  }

  /** Lowest-address block at or above `from` whose size is ≥ `need`, or {@link NIL}. */
  firstFrom(from: number, need: number): number {
    if (this.entries === 0) return NIL;
    const s = this.shift;
    const keys = this.keys;
    let x = this.root;
    for (let h = this.height; h > 0; h--) {
      const base = x << s;
      let i = this.counts[x]! - 1;
      while (i > 0 && keys[base + i]! > from) i--;
      x = this.refs[base + i]!;
    }
    const base = x << s;
    const c = this.counts[x]!;
    let pos = 0;
    while (pos < c && keys[base + pos]! < from) pos++;
    return this.scanFrom(x, pos, need);
  }

  /** The next block after filed block `id` in address order whose size is ≥ `need`, or NIL. */
  nextAfter(id: number, need: number): number {
    return this.scanFrom(this.leafOf[id]!, this.slotOf[id]! + 1, need);
  }

  /** Address of filed block `id`. */
  addressOf(id: number): number {
    return this.keys[(this.leafOf[id]! << this.shift) + this.slotOf[id]!]!;
  }

  /**
   * The first block from slot `pos` of leaf `leaf` on, in address order, whose size is ≥ `need`:
   * the rest of the leaf, then the later siblings of each ancestor in turn, descending into the
   * first whose maximum is large enough.
   */
  private scanFrom(leaf: number, pos: number, need: number): number {
    const s = this.shift;
    const sizes = this.sizes;
    let x = leaf;
    let i = pos;
    let h = 0;
    for (;;) {
      const base = x << s;
      const end = base + this.counts[x]!;
      let e = base + i;
      while (e < end && sizes[e]! < need) e++;
      if (e < end) return h === 0 ? this.refs[e]! : this.leftmost(this.refs[e]!, h - 1, need);
      const p = this.parent[x]!;
      if (p === NIL) return NIL;
      i = this.position[x]! + 1;
      x = p;
      h++;
    }
  }

  /** Leftmost block under node `start` (at level `h`) whose size is ≥ `need`; one must exist. */
  private leftmost(start: number, h: number, need: number): number {
    const s = this.shift;
    const sizes = this.sizes;
    let x = start;
    for (let level = h; ; level--) {
      let e = x << s;
      while (sizes[e]! < need) e++;
      if (level === 0) return this.refs[e]!;
      x = this.refs[e]!;
    }
  }
}
