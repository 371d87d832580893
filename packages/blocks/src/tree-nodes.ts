/**
 * The storage of {@link OrderedTree} and the changes to its shape: nodes in typed arrays, entry
 * shifts, splits and merges, and the upkeep of each internal entry's smallest key and largest
 * value. {@link OrderedTree} adds the key-order operations on top (search, insert, rekey); the
 * module comment of `ordered-tree.ts` describes the structure.
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

/**
 * The larger of `a` and `b` without a branch: (a + b + |a − b|) / 2. Exact for integers in
 * [0, 2^52), which every value is (sizes in bytes, at most 2^48): each sum is an exact double.
 */
function larger(a: number, b: number): number {
  return 0.5 * (a + b + Math.abs(a - b));
}

/** Node storage and structural changes of an {@link OrderedTree}. */
export abstract class TreeNodes {
  // Fields without an initialiser are `declare`d and assigned in the constructor (no `undefined`
  // first), so V8 keeps their representation exact.
  /** Whether the largest value below each child is maintained. */
  declare readonly augmented: boolean;
  /** Entries per node. */
  declare protected readonly width: number;
  /** Per entry (node × width + slot): primary key, secondary key, value (leaf) or maximum (internal). */
  declare protected primaryKey: Float64Array;
  declare protected secondaryKey: Float64Array;
  declare protected valueOf: Float64Array;
  /** Per entry: the id (leaf) or the child node (internal). */
  declare protected ref: Int32Array;
  /** Per node: entries used. */
  declare protected counts: Int32Array;
  /** Per node: parent node, or {@link NIL} for the root; for spare nodes, the next spare. */
  declare protected parent: Int32Array;
  /** Per node: its slot in the parent. */
  declare protected position: Int32Array;
  /** Per leaf: next and previous leaf in key order. */
  declare protected nextLeaf: Int32Array;
  declare protected prevLeaf: Int32Array;
  /** Per node: its level, 0 for a leaf (a descent counts down from {@link height} instead). */
  declare protected level: Uint8Array;
  /** Per id: its leaf, or {@link NIL} when absent; and its slot there. */
  declare protected leafOf: Int32Array;
  declare protected slotOf: Int32Array;
  /**
   * Whether a secondary key other than 0 was ever stored. Until one is, every stored secondary key
   * is 0 (the arrays start zeroed), so moves and copies skip them: a tree keyed by one number
   * (first fit keys by `(address, 0)`) writes a third fewer entries per shift.
   */
  protected paired = false;
  protected root = NIL;
  /** Levels below the root: 0 when the root is a leaf. */
  protected height = 0;
  protected head = NIL;
  protected tail = NIL;
  protected spare = NIL;
  protected usedNodes = 0;
  protected entries = 0;

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
    this.level = new Uint8Array(nodes);
    this.leafOf = new Int32Array(ids).fill(NIL);
    this.slotOf = new Int32Array(ids);
    this.resetNodes();
  }

  /** Largest value of node `x`'s entries (a leaf's values, an internal node's maxima). */
  protected nodeMax(x: number): number {
    const values = this.valueOf;
    const base = x * this.width;
    const end = base + this.counts[x]!;
    // Four running maxima, combined branch-free ({@link larger}): a compare-and-keep loop
    // mispredicts each time a new maximum appears, which cost more than twice as much over a
    // leaf's twenty or so entries; four chains keep the floating-point units busy.
    let a = 0;
    let b = 0;
    let c = 0;
    let d = 0;
    let e = base;
    for (; e + 3 < end; e += 4) {
      a = larger(a, values[e]!);
      b = larger(b, values[e + 1]!);
      c = larger(c, values[e + 2]!);
      d = larger(d, values[e + 3]!);
    }
    if (e < end) a = larger(a, values[e]!);
    if (e + 1 < end) b = larger(b, values[e + 1]!);
    if (e + 2 < end) c = larger(c, values[e + 2]!);
    return larger(larger(a, b), larger(c, d));
  }

  /** Slot 0 of `x` changed: copies its key into the ancestors for which it is the smallest. */
  protected fixMin(start: number): void {
    const w = this.width;
    let x = start;
    const from = x * w;
    const primary = this.primaryKey[from]!;
    const secondary = this.secondaryKey[from]!;
    const paired = this.paired;
    for (;;) {
      const p = this.parent[x]!;
      if (p === NIL) return;
      const pos = this.position[x]!;
      const e = p * w + pos;
      this.primaryKey[e] = primary;
      if (paired) this.secondaryKey[e] = secondary;
      if (pos !== 0) return;
      x = p;
    }
  }

  /**
   * A value of `x` that was `old` shrank or left: recomputes the maxima above it while they change.
   * Nothing to do when a larger value than `old` sits in `x`'s subtree.
   */
  protected lowerMax(start: number, old: number): void {
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
  protected shiftRight(x: number, pos: number): void {
    const c = this.counts[x]!;
    this.counts[x] = c + 1;
    if (this.level[x] !== 0) {
      const base = x * this.width;
      for (let i = c; i > pos; i--) this.copyEntry(base + i - 1, x, i, false);
      return;
    }
    // Leaves: the hot case, with the arrays in locals; the ids stay in this leaf.
    const base = x * this.width;
    const primaryKey = this.primaryKey;
    const secondaryKey = this.secondaryKey;
    const paired = this.paired;
    const values = this.valueOf;
    const ref = this.ref;
    const slotOf = this.slotOf;
    for (let i = c; i > pos; i--) {
      const to = base + i;
      const from = to - 1;
      primaryKey[to] = primaryKey[from]!;
      if (paired) secondaryKey[to] = secondaryKey[from]!;
      values[to] = values[from]!;
      const id = ref[from]!;
      ref[to] = id;
      slotOf[id] = i;
    }
  }

  /** Closes slot `pos` of node `x` by moving the entries after it one slot left. */
  protected shiftLeft(x: number, pos: number): void {
    const c = this.counts[x]! - 1;
    this.counts[x] = c;
    const base = x * this.width;
    if (this.level[x] !== 0) {
      for (let i = pos; i < c; i++) this.copyEntry(base + i + 1, x, i, false);
      return;
    }
    const primaryKey = this.primaryKey;
    const secondaryKey = this.secondaryKey;
    const paired = this.paired;
    const values = this.valueOf;
    const ref = this.ref;
    const slotOf = this.slotOf;
    for (let i = pos; i < c; i++) {
      const to = base + i;
      const from = to + 1;
      primaryKey[to] = primaryKey[from]!;
      if (paired) secondaryKey[to] = secondaryKey[from]!;
      values[to] = values[from]!;
      const id = ref[from]!;
      ref[to] = id;
      slotOf[id] = i;
    }
  }

  /** Copies entry `from` into slot `slot` of node `x`, updating the back references of its id or child. */
  protected copyEntry(from: number, x: number, slot: number, isLeaf: boolean): void {
    const to = x * this.width + slot;
    this.primaryKey[to] = this.primaryKey[from]!;
    if (this.paired) this.secondaryKey[to] = this.secondaryKey[from]!;
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
  protected removeEntry(x: number, pos: number): void {
    const isLeaf = this.level[x] === 0;
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
  protected unlinkNode(x: number): void {
    const p = this.parent[x]!;
    const pos = this.position[x]!;
    if (this.level[x] === 0) {
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
  protected mergeSmall(x: number): void {
    const p = this.parent[x]!;
    if (p === NIL) {
      if (this.level[x] !== 0 && this.counts[x] === 1) this.collapseRoot();
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
    const isLeaf = this.level[left] === 0;
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
  protected collapseRoot(): void {
    let r = this.root;
    while (this.height > 0 && this.counts[r] === 1) {
      const child = this.ref[r * this.width]!;
      this.freeNode(r);
      this.parent[child] = NIL;
      r = child;
      this.height--;
    }
    this.root = r;
  }

  /** Splits full node `x`: its upper half moves to a new right sibling, which is returned. */
  protected split(x: number): number {
    const w = this.width;
    let p = this.parent[x]!;
    if (p !== NIL && this.counts[p] === w) {
      this.split(p);
      p = this.parent[x]!;
    }
    const level = this.level[x]!;
    const isLeaf = level === 0;
    const y = this.takeNode(level);
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
      p = this.takeNode(level + 1);
      const e = p * w;
      this.primaryKey[e] = this.primaryKey[xb]!;
      if (this.paired) this.secondaryKey[e] = this.secondaryKey[xb]!;
      this.ref[e] = x;
      this.counts[p] = 1;
      this.parent[x] = p;
      this.position[x] = 0;
      this.parent[p] = NIL;
      this.root = p;
      this.height++;
    }
    const at = this.position[x]! + 1;
    this.shiftRight(p, at);
    const e = p * w + at;
    const yb = y * w;
    this.primaryKey[e] = this.primaryKey[yb]!;
    if (this.paired) this.secondaryKey[e] = this.secondaryKey[yb]!;
    this.ref[e] = y;
    this.parent[y] = p;
    this.position[y] = at;
    if (this.augmented) {
      this.valueOf[e - 1] = this.nodeMax(x);
      this.valueOf[e] = this.nodeMax(y);
    }
    return y;
  }

  /** A fresh node at `level` (0 for a leaf), from the spare list or the arrays' end. */
  protected takeNode(level: number): number {
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
    this.nextLeaf[x] = NIL;
    this.prevLeaf[x] = NIL;
    return x;
  }

  protected freeNode(x: number): void {
    this.counts[x] = 0;
    this.parent[x] = this.spare;
    this.spare = x;
  }

  /** One empty leaf as the root; every node slot spare. Ids must already be absent. */
  protected resetNodes(): void {
    this.spare = NIL;
    this.usedNodes = 0;
    this.entries = 0;
    this.height = 0;
    const r = this.takeNode(0);
    this.root = r;
    this.head = r;
    this.tail = r;
  }

  protected growNodes(): void {
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
    const level = new Uint8Array(n);
    level.set(this.level);
    this.level = level;
  }
}
