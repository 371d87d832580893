/**
 * Ordered tree: a B+tree in typed arrays over caller-chosen integer ids, keyed by a pair of doubles
 * `(primary, secondary)` compared lexicographically, each id carrying a `value` (a block size).
 * Keys must be unique: no two ids may share `(primary, secondary)` (every caller keys blocks by
 * address, or by size then address); the order of equal keys is not defined.
 *
 * It has the same interface as {@link OrderedIndex} and is what the fit strategies use: a node
 * holds up to 32 entries side by side in each array, so a lookup touches two or three nodes where
 * the treap follows twenty or more scattered links.
 *
 * - A leaf holds ids in key order, with their keys and values. Leaves are chained both ways, so
 *   `successor`, `predecessor`, `first` and `last` are O(1) and need no parent walk.
 * - An internal node holds, per child, the child's smallest key (exact: it is refreshed when a
 *   first key changes) and, with `augmented`, the largest value below it, which answers "leftmost
 *   key ≥ k whose value ≥ v" by skipping whole subtrees.
 * - Per id, its leaf and slot (`leafOf`, `slotOf`): removal and in-place updates go straight to the
 *   entry, and the first key / largest value are refreshed upward only while they change (a value
 *   that shrinks below its parent's maximum costs nothing). `rekey` moves an entry within its leaf
 *   when its new place is there, and only otherwise removes and inserts it.
 * - A node's level is known on the way down (the root's height, less one per step), so a descent
 *   reads no per-node leaf flag. Below the root, a search for the leftmost value ≥ v scans each
 *   node without a bound: the maxima are exact, so the child it entered holds one.
 * - Until a secondary key other than 0 is stored, every stored one is 0 and shifts, splits and
 *   merges skip them: a tree keyed by one number (first fit's `(address, 0)`) moves two arrays'
 *   entries, not three.
 * - A full node splits in two; an emptied node is unlinked, and a node under a quarter full merges
 *   with a neighbour when both fit in half a node. The root collapses when it has one child.
 * - Equal keys keep insertion order (a new id goes after its equals), as in {@link OrderedIndex}.
 *
 * Nodes and ids live in arrays that double on demand and are recycled through a spare list, so
 * insert, remove and update allocate nothing. Keys are doubles, exact up to 2^53; values are
 * integers in [0, 2^52) (block sizes in bytes), whose largest is taken without a branch. Only
 * counts and slots see integer arithmetic.
 *
 * ```
 *  internal      [ (16,0) max 96 | (72,0) max 512 ]        smallest key and largest value per child
 *                   /                      \
 *  leaves   [ (16,0) 96 | (40,0) 8 ] ⇄ [ (72,0) 24 | (90,0) 512 ]     key and value per id
 * ```
 */
import { growInt, NIL } from './block-table';
import { TreeNodes } from './tree-nodes';

export type { OrderedTreeOptions } from './tree-nodes';

export class OrderedTree extends TreeNodes {
  /** Number of ids in the tree. */
  get count(): number {
    return this.entries;
  }

  /** Whether `id` is in the tree. */
  has(id: number): boolean {
    return id >= 0 && id < this.leafOf.length && this.leafOf[id] !== NIL;
  }

  /** Primary key of `id` (which must be in the tree). */
  primary(id: number): number {
    return this.primaryKey[this.leafOf[id]! * this.width + this.slotOf[id]!]!;
  }

  /** Secondary key of `id`. */
  secondary(id: number): number {
    return this.secondaryKey[this.leafOf[id]! * this.width + this.slotOf[id]!]!;
  }

  /** Value of `id`. */
  value(id: number): number {
    return this.valueOf[this.leafOf[id]! * this.width + this.slotOf[id]!]!;
  }

  /** Largest value in the tree (0 when empty) when augmented, else the last key's value. */
  maxValue(): number {
    if (this.entries === 0) return 0;
    if (!this.augmented) return this.valueOf[this.tail * this.width + this.counts[this.tail]! - 1]!;
    return this.nodeMax(this.root);
  }

  /** Smallest key's id, or {@link NIL}. O(1). */
  first(): number {
    return this.entries === 0 ? NIL : this.ref[this.head * this.width]!;
  }

  /** Largest key's id, or {@link NIL}. O(1). */
  last(): number {
    return this.entries === 0
      ? NIL
      : this.ref[this.tail * this.width + this.counts[this.tail]! - 1]!;
  }

  /** Empties the tree. Keeps the arrays. */
  clear(): void {
    this.leafOf.fill(NIL);
    this.resetNodes();
  }

  /** Adds `id` with its key and value, after any equal keys. `id` must not be in the tree. */
  insert(id: number, primary: number, secondary: number, value: number): void {
    if (id >= this.leafOf.length) this.growIds(id + 1);
    this.insertInto(this.descend(primary, secondary), id, primary, secondary, value);
  }

  /** Removes `id`, which must be in the tree. */
  remove(id: number): void {
    const x = this.leafOf[id]!;
    const pos = this.slotOf[id]!;
    this.leafOf[id] = NIL;
    this.entries--;
    this.removeEntry(x, pos);
  }

  /**
   * Changes the key and value of `id` when its order among the other ids is unchanged: the caller
   * guarantees the new key still sorts between its predecessor and successor.
   */
  updateInPlace(id: number, primary: number, secondary: number, value: number): void {
    const x = this.leafOf[id]!;
    const pos = this.slotOf[id]!;
    const e = x * this.width + pos;
    // A first key that did not change (the entry's value changed alone) has nothing to copy up.
    const moved =
      pos === 0 && (this.primaryKey[e] !== primary || this.secondaryKey[e] !== secondary);
    this.primaryKey[e] = primary;
    this.setSecondary(e, secondary);
    const old = this.valueOf[e]!;
    this.valueOf[e] = value;
    if (moved) this.fixMin(x);
    if (this.augmented && old !== value) {
      if (value > old) this.raiseMax(x, value);
      else this.lowerMax(x, old);
    }
  }

  /** Changes the key and value of `id`: in place when the order allows, else remove and insert. */
  rekey(id: number, primary: number, secondary: number, value: number): void {
    if (!this.rekeyLocal(id, primary, secondary, value)) {
      this.remove(id);
      this.insert(id, primary, secondary, value);
    }
  }

  /**
   * Changes the key and value of `id` when its new place is in its own leaf (in place, or moved
   * within the leaf) and returns true; returns false, changing nothing, when it would move farther
   * (then remove it and insert it again).
   */
  rekeyLocal(id: number, primary: number, secondary: number, value: number): boolean {
    const w = this.width;
    const x = this.leafOf[id]!;
    const pos = this.slotOf[id]!;
    let before = NIL;
    if (pos > 0) before = x * w + pos - 1;
    else if (this.prevLeaf[x] !== NIL) {
      const p = this.prevLeaf[x]!;
      before = p * w + this.counts[p]! - 1;
    }
    if (before === NIL || this.keyBefore(before, primary, secondary)) {
      let after = NIL;
      if (pos + 1 < this.counts[x]!) after = x * w + pos + 1;
      else if (this.nextLeaf[x] !== NIL) after = this.nextLeaf[x]! * w;
      if (after === NIL || this.keyAfter(after, primary, secondary)) {
        this.updateInPlace(id, primary, secondary, value);
        return true;
      }
    }
    return this.moveWithinLeaf(x, pos, primary, secondary, value);
  }

  /** First id whose key is ≥ `(primary, secondary)`, or {@link NIL}. */
  lowerBound(primary: number, secondary: number): number {
    if (this.entries === 0) return NIL;
    const w = this.width;
    const x = this.descendBelow(primary, secondary);
    const base = x * w;
    const i = this.lower(base, 0, this.counts[x]!, primary, secondary);
    if (i < this.counts[x]!) return this.ref[base + i]!;
    const n = this.nextLeaf[x]!;
    return n === NIL ? NIL : this.ref[n * w]!;
  }

  /** Next id in key order after `id`, or {@link NIL}. O(1). */
  successor(id: number): number {
    const x = this.leafOf[id]!;
    const pos = this.slotOf[id]! + 1;
    if (pos < this.counts[x]!) return this.ref[x * this.width + pos]!;
    const n = this.nextLeaf[x]!;
    return n === NIL ? NIL : this.ref[n * this.width]!;
  }

  /** Previous id in key order before `id`, or {@link NIL}. O(1). */
  predecessor(id: number): number {
    const x = this.leafOf[id]!;
    const pos = this.slotOf[id]!;
    if (pos > 0) return this.ref[x * this.width + pos - 1]!;
    const p = this.prevLeaf[x]!;
    return p === NIL ? NIL : this.ref[p * this.width + this.counts[p]! - 1]!;
  }

  /**
   * Leftmost id with primary key ≥ `from` whose value is ≥ `need`, or {@link NIL}. Needs
   * `augmented`.
   */
  firstAtLeast(from: number, need: number): number {
    if (this.entries === 0) return NIL;
    if (from === Number.NEGATIVE_INFINITY) return this.scanFrom(this.root, 0, this.height, need);
    const x = this.descendBelow(from, Number.NEGATIVE_INFINITY);
    const pos = this.lower(x * this.width, 0, this.counts[x]!, from, Number.NEGATIVE_INFINITY);
    return this.scanFrom(x, pos, 0, need);
  }

  /** First id after `id` in key order whose value is ≥ `need`, or {@link NIL}. Needs `augmented`. */
  nextAtLeast(id: number, need: number): number {
    return this.scanFrom(this.leafOf[id]!, this.slotOf[id]! + 1, 0, need);
  }

  /**
   * Moves the entry at slot `pos` of leaf `x` to the place of its new key when that place is in
   * the same leaf: after the leaf's first other key and before its last. Returns whether it did.
   */
  private moveWithinLeaf(
    x: number,
    pos: number,
    primary: number,
    secondary: number,
    value: number,
  ): boolean {
    const w = this.width;
    const c = this.counts[x]!;
    if (c < 3) return false;
    const base = x * w;
    const first = pos === 0 ? base + 1 : base;
    const last = pos === c - 1 ? base + c - 2 : base + c - 1;
    if (this.keyAfter(first, primary, secondary) || !this.keyAfter(last, primary, secondary)) {
      return false;
    }
    const e = base + pos;
    const id = this.ref[e]!;
    const old = this.valueOf[e]!;
    this.shiftLeft(x, pos);
    const to = this.upper(base, 1, c - 1, primary, secondary);
    this.shiftRight(x, to);
    const t = base + to;
    this.primaryKey[t] = primary;
    this.setSecondary(t, secondary);
    this.valueOf[t] = value;
    this.ref[t] = id;
    this.slotOf[id] = to;
    if (pos === 0) this.fixMin(x);
    if (this.augmented && old !== value) {
      if (value > old) this.raiseMax(x, value);
      else this.lowerMax(x, old);
    }
    return true;
  }

  /** The leaf where a new key goes (after its equals), from the root. */
  private descend(primary: number, secondary: number): number {
    const w = this.width;
    let x = this.root;
    // Descend to the last child whose smallest key is ≤ the new key. The root's height gives each
    // node's level, so no per-node leaf flag is read on the way down.
    for (let h = this.height; h > 0; h--) {
      const base = x * w;
      x = this.ref[base + this.upper(base, 1, this.counts[x]!, primary, secondary) - 1]!;
    }
    return x;
  }

  /** The leaf where the first key ≥ `(primary, secondary)` is, or the leaf before it, from the root. */
  private descendBelow(primary: number, secondary: number): number {
    const w = this.width;
    let x = this.root;
    // Descend to the last child whose smallest key is < the probe.
    for (let h = this.height; h > 0; h--) {
      const base = x * w;
      x = this.ref[base + this.lower(base, 1, this.counts[x]!, primary, secondary) - 1]!;
    }
    return x;
  }

  /** Puts `id` at its place in leaf `x` (chosen by {@link descend}), splitting `x` when full. */
  private insertInto(
    leaf: number,
    id: number,
    primary: number,
    secondary: number,
    value: number,
  ): void {
    const w = this.width;
    let x = leaf;
    if (this.counts[x] === w) {
      const y = this.split(x);
      if (!this.keyAfter(y * w, primary, secondary)) x = y;
    }
    const base = x * w;
    const pos = this.upper(base, 0, this.counts[x]!, primary, secondary);
    this.shiftRight(x, pos);
    const e = base + pos;
    this.primaryKey[e] = primary;
    this.setSecondary(e, secondary);
    this.valueOf[e] = value;
    this.ref[e] = id;
    this.leafOf[id] = x;
    this.slotOf[id] = pos;
    this.entries++;
    if (pos === 0) this.fixMin(x);
    if (this.augmented) this.raiseMax(x, value);
  }

  /**
   * The first id from slot `pos` of node `start` (at level `h`) on, in key order, whose value is ≥
   * `need`: the rest of the node, then the later siblings of each ancestor in turn, descending into
   * the first whose maximum is large enough; or {@link NIL}.
   */
  private scanFrom(start: number, pos: number, h: number, need: number): number {
    const w = this.width;
    const values = this.valueOf;
    let x = start;
    let i = pos;
    for (let level = h; ; level++) {
      const base = x * w;
      const end = base + this.counts[x]!;
      let e = base + i;
      while (e < end && values[e]! < need) e++;
      if (e < end)
        return level === 0 ? this.ref[e]! : this.leftmostAtLeast(this.ref[e]!, level - 1, need);
      const p = this.parent[x]!;
      if (p === NIL) return NIL;
      i = this.position[x]! + 1;
      x = p;
    }
  }

  /** A value in `x` grew to `value`: raises the maxima above it. */
  private raiseMax(start: number, value: number): void {
    const w = this.width;
    const values = this.valueOf;
    let x = start;
    for (;;) {
      const p = this.parent[x]!;
      if (p === NIL) return;
      const e = p * w + this.position[x]!;
      if (values[e]! >= value) return;
      values[e] = value;
      x = p;
    }
  }

  /** Stores `secondary` as entry `e`'s secondary key (see {@link paired}). */
  private setSecondary(e: number, secondary: number): void {
    if (secondary !== 0) {
      this.paired = true;
      this.secondaryKey[e] = secondary;
    } else if (this.paired) {
      this.secondaryKey[e] = 0;
    }
  }

  /**
   * Leftmost id under node `start` (at level `h`) whose value is ≥ `need`, which its parent's
   * maximum says exists: maxima are exact, so the scan of each node needs no bound.
   */
  private leftmostAtLeast(start: number, h: number, need: number): number {
    const w = this.width;
    const values = this.valueOf;
    let x = start;
    for (let level = h; ; level--) {
      let e = x * w;
      while (values[e]! < need) e++;
      if (level === 0) return this.ref[e]!;
      x = this.ref[e]!;
    }
  }

  /**
   * First slot in `[lo, hi)` of the node at `base` whose key is > the probe: a scan from the right,
   * which costs no more than bisection over a node's few dozen entries and, being small, inlines.
   */
  private upper(base: number, lo: number, hi: number, primary: number, secondary: number): number {
    const keys = this.primaryKey;
    let i = hi;
    while (i > lo) {
      const p = keys[base + i - 1]!;
      if (p < primary || (p === primary && this.secondaryKey[base + i - 1]! <= secondary)) break;
      i--;
    }
    return i;
  }

  /** First slot in `[lo, hi)` of the node at `base` whose key is ≥ the probe (binary search). */
  private lower(base: number, lo: number, hi: number, primary: number, secondary: number): number {
    let a = lo;
    let b = hi;
    while (a < b) {
      const mid = (a + b) >> 1;
      if (this.keyBefore(base + mid, primary, secondary)) a = mid + 1;
      else b = mid;
    }
    return a;
  }

  /** Whether entry `e` sorts before `(primary, secondary)`. */
  private keyBefore(e: number, primary: number, secondary: number): boolean {
    const p = this.primaryKey[e]!;
    return p < primary || (p === primary && this.secondaryKey[e]! < secondary);
  }

  /** Whether entry `e` sorts after `(primary, secondary)`. */
  private keyAfter(e: number, primary: number, secondary: number): boolean {
    const p = this.primaryKey[e]!;
    return p > primary || (p === primary && this.secondaryKey[e]! > secondary);
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
