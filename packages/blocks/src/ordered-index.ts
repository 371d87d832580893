/**
 * Ordered index: a treap over caller-chosen integer ids, keyed by a pair of doubles
 * `(primary, secondary)` compared lexicographically, each id carrying a `value` (a block size).
 * With `augmented`, every node also knows the largest value in its subtree, which answers
 * "leftmost key ≥ k whose value ≥ v" in O(log n).
 *
 * - Keyed by `(address, 0)`, value = size: address-ordered first fit and next fit.
 * - Keyed by `(size, address)`: exact best fit (lower bound) and worst fit (the maximum).
 *
 * Keys must be unique: no two ids may share `(primary, secondary)` (every caller keys blocks by
 * address, or by size then address); the order of equal keys is not defined.
 *
 * Nodes are ids, not objects: the caller's block slot is the node (intrusive), so no lookup maps an
 * id to a node. The arrays (links, keys, values, maxima, priorities) grow by doubling on demand;
 * insert and remove allocate nothing. Parent links make removal by id, in-order stepping and the
 * upward refresh of maxima iterative. Priorities come from a seeded xorshift, so a sequence of
 * operations always builds the same tree.
 *
 * ```
 *               (40, 0) max 96            key (primary, secondary), value and subtree max
 *              /              \
 *      (16, 0) max 96     (72, 0) max 24
 *       value 96            value 24
 * ```
 */
import { growFloat, growInt, NIL } from './block-table';
import {
  FIELDS,
  LEFT,
  LINKS,
  MAX,
  PARENT,
  PRIMARY,
  PRIORITY,
  RIGHT,
  SECONDARY,
  VALUE,
} from './ordered-index-layout';

/** Ids an index starts with room for; it doubles from there. */
const INITIAL_IDS = 64;
/** Seed of the priority generator (any non-zero 32-bit value). */
const PRIORITY_SEED = 0x2545f491;

export interface OrderedIndexOptions {
  /**
   * Keep the subtree maximum of `value` in every node (needed by {@link OrderedIndex.firstAtLeast}).
   * Costs an upward walk on every change.
   * @defaultValue false
   */
  readonly augmented?: boolean;
  /** Ids to reserve up front. @defaultValue 64 */
  readonly initialIds?: number;
}

export class OrderedIndex {
  /** Whether subtree maxima are maintained. */
  readonly augmented: boolean;
  /** Per id, {@link LINKS} words: left, right, parent, priority. */
  private links: Int32Array;
  /** Per id, {@link FIELDS} doubles: primary key, secondary key, value, subtree maximum. */
  private fields: Float64Array;
  private member: Uint8Array;
  private root = NIL;
  private lastId = NIL;
  private size = 0;
  private seed = PRIORITY_SEED;

  constructor(options: OrderedIndexOptions = {}) {
    this.augmented = options.augmented ?? false;
    const n = Math.max(4, Math.floor(options.initialIds ?? INITIAL_IDS));
    this.links = new Int32Array(n * LINKS);
    this.fields = new Float64Array(n * FIELDS);
    this.member = new Uint8Array(n);
  }

  /** Number of ids in the index. */
  get count(): number {
    return this.size;
  }

  /** Whether `id` is in the index. */
  has(id: number): boolean {
    return id >= 0 && id < this.member.length && this.member[id] === 1;
  }

  /** Primary key of `id` (which must be in the index). */
  primary(id: number): number {
    return this.fields[id * FIELDS + PRIMARY]!;
  }

  /** Secondary key of `id`. */
  secondary(id: number): number {
    return this.fields[id * FIELDS + SECONDARY]!;
  }

  /** Value of `id`. */
  value(id: number): number {
    return this.fields[id * FIELDS + VALUE]!;
  }

  /** Largest value in the index (0 when empty). O(1): the root's maximum, or the last key's value. */
  maxValue(): number {
    if (this.root === NIL) return 0;
    return this.augmented
      ? this.fields[this.root * FIELDS + MAX]!
      : this.fields[this.lastId * FIELDS + VALUE]!;
  }

  /** Smallest key's id, or {@link NIL}. */
  first(): number {
    const links = this.links;
    let x = this.root;
    if (x === NIL) return NIL;
    while (links[x * LINKS + LEFT] !== NIL) x = links[x * LINKS + LEFT]!;
    return x;
  }

  /** Largest key's id, or {@link NIL}. O(1). */
  last(): number {
    return this.lastId;
  }

  /** Empties the index. Keeps the arrays. */
  clear(): void {
    this.member.fill(0);
    this.root = NIL;
    this.lastId = NIL;
    this.size = 0;
    this.seed = PRIORITY_SEED;
  }

  /** Adds `id` with its key and value. `id` must not be in the index. */
  insert(id: number, primary: number, secondary: number, value: number): void {
    if (id >= this.member.length) this.grow(id + 1);
    const links = this.links;
    const fields = this.fields;
    const il = id * LINKS;
    const ifl = id * FIELDS;
    links[il + LEFT] = NIL;
    links[il + RIGHT] = NIL;
    fields[ifl + PRIMARY] = primary;
    fields[ifl + SECONDARY] = secondary;
    fields[ifl + VALUE] = value;
    fields[ifl + MAX] = value;
    this.member[id] = 1;
    let s = this.seed;
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    this.seed = s;
    links[il + PRIORITY] = s;
    this.size++;
    const last = this.lastId;
    // Equal keys go to the right, so a new id equal to the last one becomes the last.
    if (
      last === NIL ||
      primary > fields[last * FIELDS + PRIMARY]! ||
      (primary === fields[last * FIELDS + PRIMARY] &&
        secondary >= fields[last * FIELDS + SECONDARY]!)
    ) {
      this.lastId = id;
    }
    let x = this.root;
    if (x === NIL) {
      links[il + PARENT] = NIL;
      this.root = id;
      return;
    }
    for (;;) {
      const xp = fields[x * FIELDS + PRIMARY]!;
      const side =
        primary < xp || (primary === xp && secondary < fields[x * FIELDS + SECONDARY]!)
          ? LEFT
          : RIGHT;
      const child = links[x * LINKS + side]!;
      if (child === NIL) {
        links[x * LINKS + side] = id;
        break;
      }
      x = child;
    }
    links[il + PARENT] = x;
    if (this.augmented) {
      for (
        let y = x;
        y !== NIL && fields[y * FIELDS + MAX]! < value;
        y = links[y * LINKS + PARENT]!
      ) {
        fields[y * FIELDS + MAX] = value;
      }
    }
    const pr = s;
    for (;;) {
      const p = links[il + PARENT]!;
      if (p === NIL || links[p * LINKS + PRIORITY]! >= pr) break;
      this.rotateUp(id);
    }
  }

  /** Removes `id`, which must be in the index. */
  remove(id: number): void {
    if (id === this.lastId) this.lastId = this.predecessor(id);
    const links = this.links;
    const il = id * LINKS;
    for (;;) {
      const l = links[il + LEFT]!;
      const r = links[il + RIGHT]!;
      if (l === NIL || r === NIL) break;
      this.rotateUp(links[l * LINKS + PRIORITY]! > links[r * LINKS + PRIORITY]! ? l : r);
    }
    const child = links[il + LEFT] !== NIL ? links[il + LEFT]! : links[il + RIGHT]!;
    const p = links[il + PARENT]!;
    if (child !== NIL) links[child * LINKS + PARENT] = p;
    if (p === NIL) this.root = child;
    else if (links[p * LINKS + LEFT] === id) links[p * LINKS + LEFT] = child;
    else links[p * LINKS + RIGHT] = child;
    this.member[id] = 0;
    this.size--;
    if (this.augmented && p !== NIL) this.refreshUp(p);
  }

  /**
   * Changes the key and value of `id` when its order among the other ids is unchanged: the caller
   * guarantees the new key still sorts between its predecessor and successor. O(depth) when
   * augmented, O(1) otherwise.
   */
  updateInPlace(id: number, primary: number, secondary: number, value: number): void {
    const fields = this.fields;
    const ifl = id * FIELDS;
    fields[ifl + PRIMARY] = primary;
    fields[ifl + SECONDARY] = secondary;
    const old = fields[ifl + VALUE]!;
    fields[ifl + VALUE] = value;
    if (this.augmented && old !== value) this.refreshUp(id);
  }

  /** Changes the key and value of `id`: in place when the order allows, else remove and insert. */
  rekey(id: number, primary: number, secondary: number, value: number): void {
    const fields = this.fields;
    const before = this.predecessor(id);
    if (before === NIL || this.keyBefore(before, primary, secondary)) {
      const after = this.successor(id);
      if (
        after === NIL ||
        primary < fields[after * FIELDS + PRIMARY]! ||
        (primary === fields[after * FIELDS + PRIMARY] &&
          secondary < fields[after * FIELDS + SECONDARY]!)
      ) {
        this.updateInPlace(id, primary, secondary, value);
        if (after === NIL) this.lastId = id;
        return;
      }
    }
    this.remove(id);
    this.insert(id, primary, secondary, value);
  }

  /** First id whose key is ≥ `(primary, secondary)`, or {@link NIL}. */
  lowerBound(primary: number, secondary: number): number {
    const links = this.links;
    let x = this.root;
    let best = NIL;
    while (x !== NIL) {
      if (this.keyBefore(x, primary, secondary)) {
        x = links[x * LINKS + RIGHT]!;
      } else {
        best = x;
        x = links[x * LINKS + LEFT]!;
      }
    }
    return best;
  }

  /** Next id in key order after `id`, or {@link NIL}. */
  successor(id: number): number {
    const links = this.links;
    let x = links[id * LINKS + RIGHT]!;
    if (x !== NIL) {
      while (links[x * LINKS + LEFT] !== NIL) x = links[x * LINKS + LEFT]!;
      return x;
    }
    x = id;
    let p = links[x * LINKS + PARENT]!;
    while (p !== NIL && links[p * LINKS + RIGHT] === x) {
      x = p;
      p = links[x * LINKS + PARENT]!;
    }
    return p;
  }

  /** Previous id in key order before `id`, or {@link NIL}. */
  predecessor(id: number): number {
    const links = this.links;
    let x = links[id * LINKS + LEFT]!;
    if (x !== NIL) {
      while (links[x * LINKS + RIGHT] !== NIL) x = links[x * LINKS + RIGHT]!;
      return x;
    }
    x = id;
    let p = links[x * LINKS + PARENT]!;
    while (p !== NIL && links[p * LINKS + LEFT] === x) {
      x = p;
      p = links[x * LINKS + PARENT]!;
    }
    return p;
  }

  /**
   * Leftmost id with primary key ≥ `from` whose value is ≥ `need`, or {@link NIL}. Needs
   * `augmented`. O(log n).
   */
  firstAtLeast(from: number, need: number): number {
    const root = this.root;
    if (root === NIL || this.fields[root * FIELDS + MAX]! < need) return NIL;
    if (from === Number.NEGATIVE_INFINITY) return this.leftmostAtLeast(root, need);
    const x = this.lowerBound(from, Number.NEGATIVE_INFINITY);
    if (x === NIL) return NIL;
    return this.fields[x * FIELDS + VALUE]! >= need ? x : this.nextAtLeast(x, need);
  }

  /** First id after `id` in key order whose value is ≥ `need`, or {@link NIL}. Needs `augmented`. */
  nextAtLeast(id: number, need: number): number {
    const links = this.links;
    const fields = this.fields;
    let x = id;
    for (;;) {
      const r = links[x * LINKS + RIGHT]!;
      if (r !== NIL && fields[r * FIELDS + MAX]! >= need) return this.leftmostAtLeast(r, need);
      // Climb to the first ancestor that has x in its left subtree: the next key after x's subtree.
      for (;;) {
        const p = links[x * LINKS + PARENT]!;
        if (p === NIL) return NIL;
        const fromLeft = links[p * LINKS + LEFT] === x;
        x = p;
        if (fromLeft) break;
      }
      if (fields[x * FIELDS + VALUE]! >= need) return x;
    }
  }

  /** Whether the key of `x` sorts before `(primary, secondary)`. */
  private keyBefore(x: number, primary: number, secondary: number): boolean {
    const xp = this.fields[x * FIELDS + PRIMARY]!;
    return xp < primary || (xp === primary && this.fields[x * FIELDS + SECONDARY]! < secondary);
  }

  private leftmostAtLeast(start: number, need: number): number {
    const links = this.links;
    const fields = this.fields;
    let x = start;
    for (;;) {
      const l = links[x * LINKS + LEFT]!;
      if (l !== NIL && fields[l * FIELDS + MAX]! >= need) x = l;
      else if (fields[x * FIELDS + VALUE]! >= need) return x;
      else x = links[x * LINKS + RIGHT]!;
    }
  }

  /** Rotates `x` above its parent, keeping key order, parent links and subtree maxima. */
  private rotateUp(x: number): void {
    const links = this.links;
    const xl = x * LINKS;
    const p = links[xl + PARENT]!;
    const pl = p * LINKS;
    const g = links[pl + PARENT]!;
    // x is p's child on `side`; x's child on the other side moves under p.
    const side = links[pl + LEFT] === x ? LEFT : RIGHT;
    const other = side === LEFT ? RIGHT : LEFT;
    const b = links[xl + other]!;
    links[pl + side] = b;
    if (b !== NIL) links[b * LINKS + PARENT] = p;
    links[xl + other] = p;
    links[pl + PARENT] = x;
    links[xl + PARENT] = g;
    if (g === NIL) this.root = x;
    else if (links[g * LINKS + LEFT] === p) links[g * LINKS + LEFT] = x;
    else links[g * LINKS + RIGHT] = x;
    if (this.augmented) {
      const fields = this.fields;
      fields[x * FIELDS + MAX] = fields[p * FIELDS + MAX]!;
      this.refresh(p);
    }
  }

  /** Recomputes the subtree maximum of `x` from its value and children; returns it. */
  private refresh(x: number): number {
    const links = this.links;
    const fields = this.fields;
    let m = fields[x * FIELDS + VALUE]!;
    const l = links[x * LINKS + LEFT]!;
    const r = links[x * LINKS + RIGHT]!;
    if (l !== NIL && fields[l * FIELDS + MAX]! > m) m = fields[l * FIELDS + MAX]!;
    if (r !== NIL && fields[r * FIELDS + MAX]! > m) m = fields[r * FIELDS + MAX]!;
    fields[x * FIELDS + MAX] = m;
    return m;
  }

  /**
   * Recomputes maxima from `x` up to the root, stopping once one is unchanged (the ancestors above
   * it then are unchanged too).
   */
  private refreshUp(x: number): void {
    const links = this.links;
    const fields = this.fields;
    for (let y = x; y !== NIL; y = links[y * LINKS + PARENT]!) {
      const before = fields[y * FIELDS + MAX]!;
      if (this.refresh(y) === before) return;
    }
  }

  private grow(atLeast: number): void {
    let n = this.member.length * 2;
    while (n < atLeast) n *= 2;
    this.links = growInt(this.links, n * LINKS);
    this.fields = growFloat(this.fields, n * FIELDS);
    const member = new Uint8Array(n);
    member.set(this.member);
    this.member = member;
  }
}
