/**
 * The storage of {@link AddressTree} and the changes to its shape: nodes in typed arrays, entry
 * moves, splits and merges, and the upkeep of each internal entry's smallest key and largest size.
 * {@link AddressTree} adds the operations first fit calls (file, unfile, update, search); the module
 * comment of `address-tree.ts` describes the structure.
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

/** Node storage and structural changes of an {@link AddressTree}. */
export abstract class AddressNodes {
  // Assigned in the constructor only (no `undefined` first): V8 keeps the fields' shapes exact.
  /** Per entry (node << shift | slot): address, size (or largest size below), block (or child). */
  declare protected keys: Float64Array;
  declare protected sizes: Float64Array;
  declare protected refs: Int32Array;
  /** Per node: entries used; parent (the next spare for a spare node); slot in the parent; level. */
  declare protected counts: Int32Array;
  declare protected parent: Int32Array;
  declare protected position: Int32Array;
  declare protected level: Uint8Array;
  /** Per block: its leaf ({@link NIL} when not filed) and its slot there. */
  declare protected leafOf: Int32Array;
  declare protected slotOf: Int32Array;
  declare protected readonly shift: number;
  declare protected readonly width: number;
  declare protected root: number;
  /** Levels below the root: 0 when the root is a leaf. */
  declare protected height: number;
  declare protected spare: number;
  declare protected usedNodes: number;
  declare protected entries: number;

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

  /** Largest size among node `x`'s entries, four running maxima at a time (no branch to mispredict). */
  protected nodeMax(x: number): number {
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
  protected fixKey(start: number): void {
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
  protected raiseMax(start: number, size: number): void {
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
  protected lowerMax(start: number, old: number): void {
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
  protected open(x: number, pos: number): void {
    const c = this.counts[x]!;
    this.counts[x] = c + 1;
    const base = x << this.shift;
    this.move(x, base + pos, base + c, base + pos + 1);
  }

  /** Closes slot `pos` of node `x`, moving the entries after it one slot left. */
  protected close(x: number, pos: number): void {
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
  protected move(x: number, from: number, end: number, to: number): void {
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
  protected drop(x: number, pos: number): void {
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
  protected unlink(x: number): void {
    const p = this.parent[x]!;
    const pos = this.position[x]!;
    this.freeNode(x);
    this.drop(p, pos);
  }

  /**
   * Node `x` (not the root) is under a quarter full: merges it with a neighbour when both fit in
   * half a node.
   */
  protected mergeSmall(x: number): void {
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
  protected collapseRoot(): void {
    while (this.height > 0 && this.counts[this.root] === 1) {
      const child = this.refs[this.root << this.shift]!;
      this.freeNode(this.root);
      this.parent[child] = NIL;
      this.root = child;
      this.height--;
    }
  }

  /** Splits full node `x`: its upper half moves to a new right sibling, which is returned. */
  protected split(x: number): number {
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
    return x;
  }

  protected freeNode(x: number): void {
    this.counts[x] = 0;
    this.parent[x] = this.spare;
    this.spare = x;
  }

  /** One empty leaf as the root, every other node spare. Blocks must be unfiled already. */
  protected reset(): void {
    this.spare = NIL;
    this.usedNodes = 0;
    this.entries = 0;
    this.height = 0;
    this.root = this.takeNode(0);
  }

  protected growNodes(): void {
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

  protected growIds(atLeast: number): void {
    let n = this.leafOf.length * 2;
    while (n < atLeast) n *= 2;
    const leafOf = new Int32Array(n).fill(NIL);
    leafOf.set(this.leafOf);
    this.leafOf = leafOf;
    this.slotOf = growInt(this.slotOf, n);
  }
}
