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
import { growFloat, growInt, NIL } from '@allot/blocks';

/** Entries per node, as a power of two: 32 when none is given (4 in tests, to split often). */
const DEFAULT_SHIFT = 5;
const INITIAL_NODES = 8;
const INITIAL_IDS = 64;

/** The larger of two sizes without a branch; exact for integers below 2^52. */
function maxOf(a: number, b: number): number {
  return (a + b + Math.abs(a - b)) * 0.5;
}

export class AddressTree {
  // Assigned in the constructor only (no `undefined` first): V8 keeps the fields' shapes exact.
  /** Per entry (node << shift | slot): address, size (or largest size below), block (or child). */
  declare private keys: Float64Array;
  declare private sizes: Float64Array;
  declare private refs: Int32Array;
  /** Per node: entries used; parent (the next spare for a spare node); slot in the parent; level. */
  declare private counts: Int32Array;
  declare private parent: Int32Array;
  declare private position: Int32Array;
  declare private level: Uint8Array;
  /** Per block: its leaf ({@link NIL} when not filed) and its slot there. */
  declare private leafOf: Int32Array;
  declare private slotOf: Int32Array;
  declare private readonly shift: number;
  declare private readonly width: number;
  declare private root: number;
  /** Levels below the root: 0 when the root is a leaf. */
  declare private height: number;
  declare private spare: number;
  declare private usedNodes: number;
  declare private entries: number;

  /** @param shift - log2 of the entries per node, at least 2. @defaultValue 5 (32 entries) */
  constructor(shift: number = DEFAULT_SHIFT) {
    this.shift = Math.max(2, Math.floor(shift));
    this.width = 1 << this.shift;
    const slots = INITIAL_NODES << this.shift;
    this.keys = new Float64Array(slots);
    this.sizes = new Float64Array(slots);
    this.refs = new Int32Array(slots);
    this.counts = new Int32Array(INITIAL_NODES);
    this.parent = new Int32Array(INITIAL_NODES);
    this.position = new Int32Array(INITIAL_NODES);
    this.level = new Uint8Array(INITIAL_NODES);
    this.leafOf = new Int32Array(INITIAL_IDS).fill(NIL);
    this.slotOf = new Int32Array(INITIAL_IDS);
    this.root = NIL;
    this.height = 0;
    this.spare = NIL;
    this.usedNodes = 0;
    this.entries = 0;
    this.reset();
  }

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

  /** Largest size among node `x`'s entries, four running maxima at a time (no branch to mispredict). */
  private nodeMax(x: number): number {
    const sizes = this.sizes;
    const base = x << this.shift;
    const end = base + this.counts[x]!;
    let m0 = 0;
    let m1 = 0;
    let m2 = 0;
    let m3 = 0;
    let e = base;
    while (e + 4 <= end) {
      m0 = maxOf(m0, sizes[e]!);
      m1 = maxOf(m1, sizes[e + 1]!);
      m2 = maxOf(m2, sizes[e + 2]!);
      m3 = maxOf(m3, sizes[e + 3]!);
      e += 4;
    }
    while (e < end) m0 = maxOf(m0, sizes[e++]!);
    return maxOf(maxOf(m0, m1), maxOf(m2, m3));
  }

  /** Slot 0 of node `start` changed: its key goes up into every ancestor it is the smallest of. */
  private fixKey(start: number): void {
    const s = this.shift;
    const key = this.keys[start << s]!;
    let x = start;
    for (;;) {
      const p = this.parent[x]!;
      if (p === NIL) return;
      const slot = this.position[x]!;
      this.keys[(p << s) + slot] = key;
      if (slot !== 0) return;
      x = p;
    }
  }

  /** A size under node `start` grew to `size`: raises the maxima above it while they are smaller. */
  private raiseMax(start: number, size: number): void {
    const s = this.shift;
    const sizes = this.sizes;
    let x = start;
    for (;;) {
      const p = this.parent[x]!;
      if (p === NIL) return;
      const e = (p << s) + this.position[x]!;
      if (sizes[e]! >= size) return;
      sizes[e] = size;
      x = p;
    }
  }

  /**
   * A size under node `start` that was `old` shrank or left: recomputes the maxima above it while
   * they change. Nothing to do when the parent's maximum is larger than `old`.
   */
  private lowerMax(start: number, old: number): void {
    const s = this.shift;
    const sizes = this.sizes;
    let x = start;
    for (;;) {
      const p = this.parent[x]!;
      if (p === NIL) return;
      const e = (p << s) + this.position[x]!;
      if (sizes[e]! > old) return;
      const m = this.nodeMax(x);
      if (sizes[e] === m) return;
      sizes[e] = m;
      x = p;
    }
  }

  /** Opens slot `pos` of node `x`, moving the entries from it one slot right. */
  private open(x: number, pos: number): void {
    const c = this.counts[x]!;
    this.counts[x] = c + 1;
    const base = x << this.shift;
    this.move(x, base + pos, base + c, base + pos + 1);
  }

  /** Closes slot `pos` of node `x`, moving the entries after it one slot left. */
  private close(x: number, pos: number): void {
    const c = this.counts[x]! - 1;
    this.counts[x] = c;
    const base = x << this.shift;
    this.move(x, base + pos + 1, base + c + 1, base + pos);
  }

  /**
   * Copies entries `[from, end)` to `to` onward (into node `x`; the ranges may overlap) and points
   * their blocks or children at their new slots. A loop: a node holds a few dozen entries, fewer
   * than a call to `copyWithin` pays for three times.
   */
  private move(x: number, from: number, end: number, to: number): void {
    const keys = this.keys;
    const sizes = this.sizes;
    const refs = this.refs;
    const leaf = this.level[x] === 0;
    const back = leaf ? this.leafOf : this.parent;
    const slots = leaf ? this.slotOf : this.position;
    const shift = to - from;
    const base = x << this.shift;
    // Right to left when moving right, so that no entry is overwritten before it is read.
    const step = shift > 0 ? -1 : 1;
    const first = shift > 0 ? end - 1 : from;
    for (let n = end - from, e = first; n > 0; n--, e += step) {
      const t = e + shift;
      keys[t] = keys[e]!;
      sizes[t] = sizes[e]!;
      const r = refs[e]!;
      refs[t] = r;
      back[r] = x;
      slots[r] = t - base;
    }
  }

  /** Drops slot `pos` of node `x` and restores the invariants above it. */
  private drop(x: number, pos: number): void {
    const removed = this.sizes[(x << this.shift) + pos]!;
    this.close(x, pos);
    const c = this.counts[x]!;
    if (c === 0) {
      if (x !== this.root) this.unlink(x);
      else if (this.height > 0) this.reset();
      return;
    }
    if (pos === 0) this.fixKey(x);
    this.lowerMax(x, removed);
    if (x === this.root) this.collapseRoot();
    else if (c * 4 < this.width) this.mergeSmall(x);
  }

  /** Removes empty node `x` (not the root) from its parent. */
  private unlink(x: number): void {
    const p = this.parent[x]!;
    const pos = this.position[x]!;
    this.freeNode(x);
    this.drop(p, pos);
  }

  /**
   * Node `x` (not the root) is under a quarter full: merges it with a neighbour when both fit in
   * half a node.
   */
  private mergeSmall(x: number): void {
    const p = this.parent[x]!;
    const s = this.shift;
    const pos = this.position[x]!;
    const half = this.width >> 1;
    const c = this.counts[x]!;
    let left = x;
    let right = NIL;
    if (pos > 0 && this.counts[this.refs[(p << s) + pos - 1]!]! + c <= half) {
      left = this.refs[(p << s) + pos - 1]!;
      right = x;
    } else if (
      pos + 1 < this.counts[p]! &&
      this.counts[this.refs[(p << s) + pos + 1]!]! + c <= half
    ) {
      right = this.refs[(p << s) + pos + 1]!;
    } else {
      return;
    }
    // Right's entries go to the end of left: left's smallest key stays, its maximum may rise.
    const lc = this.counts[left]!;
    const rc = this.counts[right]!;
    this.counts[left] = lc + rc;
    this.counts[right] = 0;
    this.move(left, right << s, (right << s) + rc, (left << s) + lc);
    const e = (p << s) + this.position[left]!;
    this.sizes[e] = maxOf(this.sizes[e]!, this.sizes[(p << s) + this.position[right]!]!);
    this.unlink(right);
  }

  /** While the root is internal with one child, that child becomes the root. */
  private collapseRoot(): void {
    while (this.height > 0 && this.counts[this.root] === 1) {
      const child = this.refs[this.root << this.shift]!;
      this.freeNode(this.root);
      this.parent[child] = NIL;
      this.root = child;
      this.height--;
    }
  }

  /** Splits full node `x`: its upper half moves to a new right sibling, which is returned. */
  private split(x: number): number {
    const s = this.shift;
    let p = this.parent[x]!;
    if (p !== NIL && this.counts[p] === this.width) {
      this.split(p);
      p = this.parent[x]!;
    }
    const y = this.takeNode(this.level[x]!);
    const c = this.counts[x]!;
    const keep = c >> 1;
    this.counts[x] = keep;
    this.counts[y] = c - keep;
    this.move(y, (x << s) + keep, (x << s) + c, y << s);
    if (p === NIL) {
      p = this.takeNode(this.level[x]! + 1);
      this.counts[p] = 1;
      this.keys[p << s] = this.keys[x << s]!;
      this.refs[p << s] = x;
      this.parent[x] = p;
      this.position[x] = 0;
      this.root = p;
      this.height++;
    }
    const at = this.position[x]! + 1;
    this.open(p, at);
    const e = (p << s) + at;
    this.keys[e] = this.keys[y << s]!;
    this.refs[e] = y;
    this.parent[y] = p;
    this.position[y] = at;
    this.sizes[e - 1] = this.nodeMax(x);
    this.sizes[e] = this.nodeMax(y);
    return y;
  }

  private takeNode(level: number): number {
    let x = this.spare;
    if (x !== NIL) this.spare = this.parent[x]!;
    else {
      if (this.usedNodes === this.counts.length) this.growNodes();
      x = this.usedNodes++;
    }
    this.level[x] = level;
    this.counts[x] = 0;
    this.parent[x] = NIL;
    this.position[x] = 0;
    return x;
  }

  private freeNode(x: number): void {
    this.counts[x] = 0;
    this.parent[x] = this.spare;
    this.spare = x;
  }

  /** One empty leaf as the root, every other node spare. Blocks must be unfiled already. */
  private reset(): void {
    this.spare = NIL;
    this.usedNodes = 0;
    this.entries = 0;
    this.height = 0;
    this.root = this.takeNode(0);
  }

  private growNodes(): void {
    const n = this.counts.length * 2;
    this.keys = growFloat(this.keys, n << this.shift);
    this.sizes = growFloat(this.sizes, n << this.shift);
    this.refs = growInt(this.refs, n << this.shift);
    this.counts = growInt(this.counts, n);
    this.parent = growInt(this.parent, n);
    this.position = growInt(this.position, n);
    const level = new Uint8Array(n);
    level.set(this.level);
    this.level = level;
  }

  private growIds(atLeast: number): void {
    let n = this.leafOf.length * 2;
    while (n < atLeast) n *= 2;
    const leafOf = new Int32Array(n).fill(NIL);
    leafOf.set(this.leafOf);
    this.leafOf = leafOf;
    this.slotOf = growInt(this.slotOf, n);
  }
}
