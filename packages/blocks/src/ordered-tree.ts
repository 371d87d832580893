/**
 * Ordered tree: a B+tree in typed arrays over caller-chosen integer ids, keyed by a pair of doubles
 * `(primary, secondary)` compared lexicographically, each id carrying a `value` (a block size).
 * Keys must be unique: no two ids may share `(primary, secondary)` (every caller keys blocks by
 * address, or by size then address); the order of equal keys is not defined.
 *
 * It has the same interface as {@link OrderedIndex} and is what the fit strategies use: a node
 * holds up to 32 entries side by side in each array and is searched by bisection, so a lookup
 * touches two or three nodes where the treap follows twenty or more scattered links.
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
 * - A full node splits in two; an emptied node is unlinked, and a node under a quarter full merges
 *   with a neighbour when both fit in half a node. The root collapses when it has one child.
 * - Equal keys keep insertion order (a new id goes after its equals), as in {@link OrderedIndex}.
 *
 * Nodes and ids live in arrays that double on demand and are recycled through a spare list, so
 * insert, remove and update allocate nothing. Keys and values are doubles, exact up to 2^53; only
 * counts and slots see integer arithmetic.
 *
 * ```
 *  internal      [ (16,0) max 96 | (72,0) max 512 ]        smallest key and largest value per child
 *                   /                      \
 *  leaves   [ (16,0) 96 | (40,0) 8 ] ⇄ [ (72,0) 24 | (90,0) 512 ]     key and value per id
 * ```
 */
import { growFloat, growInt, NIL } from './block-table';

/** Entries per node when none is given. */
const DEFAULT_WIDTH = 32;
const INITIAL_IDS = 64;
const INITIAL_NODES = 8;

export interface OrderedTreeOptions {
  /**
   * Keep, per child of every internal node, the largest value below it (needed by
   * {@link OrderedTree.firstAtLeast}).
   * @defaultValue false
   */
  readonly augmented?: boolean;
  /** Ids to reserve up front. @defaultValue 64 */
  readonly initialIds?: number;
  /** Entries per node, at least 4 (small widths exercise splits and merges in tests). @defaultValue 32 */
  readonly width?: number;
}

export class OrderedTree {
  // Fields without an initialiser are `declare`d and assigned in the constructor (no `undefined`
  // first), so V8 keeps their representation exact.
  /** Whether the largest value below each child is maintained. */
  declare readonly augmented: boolean;
  /** Entries per node. */
  declare private readonly width: number;
  /** Per entry (node × width + slot): primary key, secondary key, value (leaf) or maximum (internal). */
  declare private primaryKey: Float64Array;
  declare private secondaryKey: Float64Array;
  declare private valueOf: Float64Array;
  /** Per entry: the id (leaf) or the child node (internal). */
  declare private ref: Int32Array;
  /** Per node: entries used. */
  declare private counts: Int32Array;
  /** Per node: parent node, or {@link NIL} for the root; for spare nodes, the next spare. */
  declare private parent: Int32Array;
  /** Per node: its slot in the parent. */
  declare private position: Int32Array;
  /** Per leaf: next and previous leaf in key order. */
  declare private nextLeaf: Int32Array;
  declare private prevLeaf: Int32Array;
  /** Per node: 1 for a leaf. */
  declare private leaf: Uint8Array;
  /** Per id: its leaf, or {@link NIL} when absent; and its slot there. */
  declare private leafOf: Int32Array;
  declare private slotOf: Int32Array;
  private root = NIL;
  private head = NIL;
  private tail = NIL;
  private spare = NIL;
  private usedNodes = 0;
  private entries = 0;

  constructor(options: OrderedTreeOptions = {}) {
    this.augmented = options.augmented ?? false;
    this.width = Math.max(4, Math.floor(options.width ?? DEFAULT_WIDTH));
    const ids = Math.max(4, Math.floor(options.initialIds ?? INITIAL_IDS));
    const nodes = INITIAL_NODES;
    const slots = nodes * this.width;
    this.primaryKey = new Float64Array(slots);
    this.secondaryKey = new Float64Array(slots);
    this.valueOf = new Float64Array(slots);
    this.ref = new Int32Array(slots);
    this.counts = new Int32Array(nodes);
    this.parent = new Int32Array(nodes);
    this.position = new Int32Array(nodes);
    this.nextLeaf = new Int32Array(nodes);
    this.prevLeaf = new Int32Array(nodes);
    this.leaf = new Uint8Array(nodes);
    this.leafOf = new Int32Array(ids).fill(NIL);
    this.slotOf = new Int32Array(ids);
    this.resetNodes();
  }

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
    this.primaryKey[e] = primary;
    this.secondaryKey[e] = secondary;
    const old = this.valueOf[e]!;
    this.valueOf[e] = value;
    if (pos === 0) this.fixMin(x);
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
    let x = this.root;
    // Descend to the last child whose smallest key is < the probe.
    while (this.leaf[x] === 0) {
      const base = x * w;
      x = this.ref[base + this.lower(base, 1, this.counts[x]!, primary, secondary) - 1]!;
    }
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
    if (from === Number.NEGATIVE_INFINITY) return this.leftmostAtLeast(this.root, need);
    const x = this.lowerBound(from, Number.NEGATIVE_INFINITY);
    if (x === NIL) return NIL;
    return this.value(x) >= need ? x : this.nextAtLeast(x, need);
  }

  /** First id after `id` in key order whose value is ≥ `need`, or {@link NIL}. Needs `augmented`. */
  nextAtLeast(id: number, need: number): number {
    const w = this.width;
    const values = this.valueOf;
    let x = this.leafOf[id]!;
    let base = x * w;
    const c = this.counts[x]!;
    for (let i = this.slotOf[id]! + 1; i < c; i++) {
      if (values[base + i]! >= need) return this.ref[base + i]!;
    }
    // Climb until a later sibling subtree holds a large enough value, then descend into it.
    for (;;) {
      const p = this.parent[x]!;
      if (p === NIL) return NIL;
      base = p * w;
      const pc = this.counts[p]!;
      for (let i = this.position[x]! + 1; i < pc; i++) {
        if (values[base + i]! >= need) return this.leftmostAtLeast(this.ref[base + i]!, need);
      }
      x = p;
    }
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
    this.secondaryKey[t] = secondary;
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

  /** First slot in `[lo, hi)` of the node at `base` whose key is > the probe (binary search). */
  private upper(base: number, lo: number, hi: number, primary: number, secondary: number): number {
    let a = lo;
    let b = hi;
    while (a < b) {
      const mid = (a + b) >> 1;
      if (this.keyAfter(base + mid, primary, secondary)) b = mid;
      else a = mid + 1;
    }
    return a;
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

  /** The leaf where a new key goes (after its equals), from the root. */
  private descend(primary: number, secondary: number): number {
    const w = this.width;
    let x = this.root;
    // Descend to the last child whose smallest key is ≤ the new key.
    while (this.leaf[x] === 0) {
      const base = x * w;
      x = this.ref[base + this.upper(base, 1, this.counts[x]!, primary, secondary) - 1]!;
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
    this.secondaryKey[e] = secondary;
    this.valueOf[e] = value;
    this.ref[e] = id;
    this.leafOf[id] = x;
    this.slotOf[id] = pos;
    this.entries++;
    if (pos === 0) this.fixMin(x);
    if (this.augmented) this.raiseMax(x, value);
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

  /** Leftmost id under node `x` whose value is ≥ `need`, or {@link NIL}. */
  private leftmostAtLeast(start: number, need: number): number {
    const w = this.width;
    const values = this.valueOf;
    let x = start;
    for (;;) {
      const base = x * w;
      const c = this.counts[x]!;
      let i = 0;
      while (i < c && values[base + i]! < need) i++;
      if (i === c) return NIL;
      if (this.leaf[x] === 1) return this.ref[base + i]!;
      x = this.ref[base + i]!;
    }
  }

  /** Largest value of node `x`'s entries (a leaf's values, an internal node's maxima). */
  private nodeMax(x: number): number {
    const values = this.valueOf;
    const base = x * this.width;
    const end = base + this.counts[x]!;
    let m = 0;
    for (let e = base; e < end; e++) if (values[e]! > m) m = values[e]!;
    return m;
  }

  /** Slot 0 of `x` changed: copies its key into the ancestors for which it is the smallest. */
  private fixMin(start: number): void {
    const w = this.width;
    let x = start;
    const from = x * w;
    const primary = this.primaryKey[from]!;
    const secondary = this.secondaryKey[from]!;
    for (;;) {
      const p = this.parent[x]!;
      if (p === NIL) return;
      const pos = this.position[x]!;
      const e = p * w + pos;
      this.primaryKey[e] = primary;
      this.secondaryKey[e] = secondary;
      if (pos !== 0) return;
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

  /**
   * A value of `x` that was `old` shrank or left: recomputes the maxima above it while they change.
   * Nothing to do when a larger value than `old` sits in `x`'s subtree.
   */
  private lowerMax(start: number, old: number): void {
    const w = this.width;
    const values = this.valueOf;
    let x = start;
    for (;;) {
      const p = this.parent[x]!;
      if (p === NIL) return;
      const e = p * w + this.position[x]!;
      if (values[e]! > old) return;
      const m = this.nodeMax(x);
      if (values[e] === m) return;
      values[e] = m;
      x = p;
    }
  }

  /** Opens slot `pos` of node `x` by moving the entries from it one slot right. */
  private shiftRight(x: number, pos: number): void {
    const c = this.counts[x]!;
    this.counts[x] = c + 1;
    if (this.leaf[x] === 0) {
      const base = x * this.width;
      for (let i = c; i > pos; i--) this.copyEntry(base + i - 1, x, i, false);
      return;
    }
    // Leaves: the hot case, with the arrays in locals; the ids stay in this leaf.
    const base = x * this.width;
    const primaryKey = this.primaryKey;
    const secondaryKey = this.secondaryKey;
    const values = this.valueOf;
    const ref = this.ref;
    const slotOf = this.slotOf;
    for (let i = c; i > pos; i--) {
      const to = base + i;
      const from = to - 1;
      primaryKey[to] = primaryKey[from]!;
      secondaryKey[to] = secondaryKey[from]!;
      values[to] = values[from]!;
      const id = ref[from]!;
      ref[to] = id;
      slotOf[id] = i;
    }
  }

  /** Closes slot `pos` of node `x` by moving the entries after it one slot left. */
  private shiftLeft(x: number, pos: number): void {
    const c = this.counts[x]! - 1;
    this.counts[x] = c;
    const base = x * this.width;
    if (this.leaf[x] === 0) {
      for (let i = pos; i < c; i++) this.copyEntry(base + i + 1, x, i, false);
      return;
    }
    const primaryKey = this.primaryKey;
    const secondaryKey = this.secondaryKey;
    const values = this.valueOf;
    const ref = this.ref;
    const slotOf = this.slotOf;
    for (let i = pos; i < c; i++) {
      const to = base + i;
      const from = to + 1;
      primaryKey[to] = primaryKey[from]!;
      secondaryKey[to] = secondaryKey[from]!;
      values[to] = values[from]!;
      const id = ref[from]!;
      ref[to] = id;
      slotOf[id] = i;
    }
  }

  /** Copies entry `from` into slot `slot` of node `x`, updating the back references of its id or child. */
  private copyEntry(from: number, x: number, slot: number, isLeaf: boolean): void {
    const to = x * this.width + slot;
    this.primaryKey[to] = this.primaryKey[from]!;
    this.secondaryKey[to] = this.secondaryKey[from]!;
    this.valueOf[to] = this.valueOf[from]!;
    const r = this.ref[from]!;
    this.ref[to] = r;
    if (isLeaf) {
      this.leafOf[r] = x;
      this.slotOf[r] = slot;
    } else {
      this.parent[r] = x;
      this.position[r] = slot;
    }
  }

  /** Drops slot `pos` of node `x` and restores the invariants above it. */
  private removeEntry(x: number, pos: number): void {
    const isLeaf = this.leaf[x] === 1;
    const removed = this.valueOf[x * this.width + pos]!;
    this.shiftLeft(x, pos);
    const c = this.counts[x]!;
    if (c === 0) {
      if (x === this.root) {
        if (isLeaf) return;
        this.resetNodes();
        return;
      }
      this.unlinkNode(x);
      return;
    }
    if (pos === 0) this.fixMin(x);
    if (this.augmented) this.lowerMax(x, removed);
    if (c * 4 < this.width) this.mergeSmall(x);
    else if (x === this.root && !isLeaf && c === 1) this.collapseRoot();
  }

  /** Removes empty node `x` (not the root) from its parent. */
  private unlinkNode(x: number): void {
    const p = this.parent[x]!;
    const pos = this.position[x]!;
    if (this.leaf[x] === 1) {
      const prev = this.prevLeaf[x]!;
      const next = this.nextLeaf[x]!;
      if (prev === NIL) this.head = next;
      else this.nextLeaf[prev] = next;
      if (next === NIL) this.tail = prev;
      else this.prevLeaf[next] = prev;
    }
    this.freeNode(x);
    this.removeEntry(p, pos);
  }

  /** Node `x` is under a quarter full: merges it with a neighbour when both fit in half a node. */
  private mergeSmall(x: number): void {
    const p = this.parent[x]!;
    if (p === NIL) {
      if (this.leaf[x] === 0 && this.counts[x] === 1) this.collapseRoot();
      return;
    }
    const w = this.width;
    const pos = this.position[x]!;
    const half = w >> 1;
    let left = NIL;
    let right = NIL;
    if (pos > 0 && this.counts[this.ref[p * w + pos - 1]!]! + this.counts[x]! <= half) {
      left = this.ref[p * w + pos - 1]!;
      right = x;
    } else if (
      pos + 1 < this.counts[p]! &&
      this.counts[this.ref[p * w + pos + 1]!]! + this.counts[x]! <= half
    ) {
      left = x;
      right = this.ref[p * w + pos + 1]!;
    } else {
      return;
    }
    // Move right's entries to the end of left; left's smallest key is unchanged.
    const isLeaf = this.leaf[left] === 1;
    const rc = this.counts[right]!;
    const lc = this.counts[left]!;
    const rb = right * w;
    for (let i = 0; i < rc; i++) this.copyEntry(rb + i, left, lc + i, isLeaf);
    this.counts[left] = lc + rc;
    this.counts[right] = 0;
    if (this.augmented) {
      const e = p * w + this.position[left]!;
      const m = this.valueOf[p * w + this.position[right]!]!;
      if (m > this.valueOf[e]!) this.valueOf[e] = m;
    }
    this.unlinkNode(right);
  }

  /** The root is internal with one child: that child becomes the root. */
  private collapseRoot(): void {
    let r = this.root;
    while (this.leaf[r] === 0 && this.counts[r] === 1) {
      const child = this.ref[r * this.width]!;
      this.freeNode(r);
      this.parent[child] = NIL;
      r = child;
    }
    this.root = r;
  }

  /** Splits full node `x`: its upper half moves to a new right sibling, which is returned. */
  private split(x: number): number {
    const w = this.width;
    let p = this.parent[x]!;
    if (p !== NIL && this.counts[p] === w) {
      this.split(p);
      p = this.parent[x]!;
    }
    const isLeaf = this.leaf[x] === 1;
    const y = this.takeNode(isLeaf);
    const c = this.counts[x]!;
    const keep = c >> 1;
    const xb = x * w;
    for (let i = keep; i < c; i++) this.copyEntry(xb + i, y, i - keep, isLeaf);
    this.counts[x] = keep;
    this.counts[y] = c - keep;
    if (isLeaf) {
      const next = this.nextLeaf[x]!;
      this.nextLeaf[y] = next;
      this.prevLeaf[y] = x;
      this.nextLeaf[x] = y;
      if (next === NIL) this.tail = y;
      else this.prevLeaf[next] = y;
    }
    if (p === NIL) {
      p = this.takeNode(false);
      const e = p * w;
      this.primaryKey[e] = this.primaryKey[xb]!;
      this.secondaryKey[e] = this.secondaryKey[xb]!;
      this.ref[e] = x;
      this.counts[p] = 1;
      this.parent[x] = p;
      this.position[x] = 0;
      this.parent[p] = NIL;
      this.root = p;
    }
    const at = this.position[x]! + 1;
    this.shiftRight(p, at);
    const e = p * w + at;
    const yb = y * w;
    this.primaryKey[e] = this.primaryKey[yb]!;
    this.secondaryKey[e] = this.secondaryKey[yb]!;
    this.ref[e] = y;
    this.parent[y] = p;
    this.position[y] = at;
    if (this.augmented) {
      this.valueOf[e - 1] = this.nodeMax(x);
      this.valueOf[e] = this.nodeMax(y);
    }
    return y;
  }

  private takeNode(isLeaf: boolean): number {
    let x = this.spare;
    if (x !== NIL) this.spare = this.parent[x]!;
    else {
      if (this.usedNodes === this.counts.length) this.growNodes();
      x = this.usedNodes++;
    }
    this.leaf[x] = isLeaf ? 1 : 0;
    this.counts[x] = 0;
    this.parent[x] = NIL;
    this.position[x] = 0;
    this.nextLeaf[x] = NIL;
    this.prevLeaf[x] = NIL;
    return x;
  }

  private freeNode(x: number): void {
    this.counts[x] = 0;
    this.parent[x] = this.spare;
    this.spare = x;
  }

  /** One empty leaf as the root; every node slot spare. Ids must already be absent. */
  private resetNodes(): void {
    this.spare = NIL;
    this.usedNodes = 0;
    this.entries = 0;
    const r = this.takeNode(true);
    this.root = r;
    this.head = r;
    this.tail = r;
  }

  private growNodes(): void {
    const n = this.counts.length * 2;
    const slots = n * this.width;
    this.primaryKey = growFloat(this.primaryKey, slots);
    this.secondaryKey = growFloat(this.secondaryKey, slots);
    this.valueOf = growFloat(this.valueOf, slots);
    this.ref = growInt(this.ref, slots);
    this.counts = growInt(this.counts, n);
    this.parent = growInt(this.parent, n);
    this.position = growInt(this.position, n);
    this.nextLeaf = growInt(this.nextLeaf, n);
    this.prevLeaf = growInt(this.prevLeaf, n);
    const leaf = new Uint8Array(n);
    leaf.set(this.leaf);
    this.leaf = leaf;
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
