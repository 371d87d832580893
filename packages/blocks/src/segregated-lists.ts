/**
 * Two-level segregated free lists with bitmaps, in the style of TLSF (Masmano et al., 2004).
 *
 * A size falls into a class: the first level is ⌊log2 size⌋, the second level splits each power of
 * two into {@link SECOND_LEVEL_COUNT} equal parts, so a class spans at most 1/32 of its sizes
 * (the bounded waste of good fit). Sizes below {@link SECOND_LEVEL_COUNT} get one class each. Every
 * class holds a doubly linked list of ids; one bitmap per first level marks the non-empty second-level
 * classes and one bitmap marks the non-empty first levels, so the first non-empty class at or above
 * a given one is found with a few `Math.clz32` calls: O(1).
 *
 * ```
 *  first level  (bitmap 0b…1010)        second level (bitmap per row)     lists
 *  row 1  [32, 64)   ──────────────►   | 0 | 1 | 0 | … |   class 33 ──► id 7 ⇄ id 2
 *  row 3  [128, 256) ──────────────►   | 1 | 0 | … | 0 |   class 96 ──► id 4
 * ```
 *
 * Sizes are counts of any unit; the fit engine files blocks in granules (bytes / minimum
 * alignment), so a size below 2^31 is a small integer count and its class comes from one
 * `Math.clz32` and one shift of that count, with no floating-point step. Larger counts take an
 * exact float path (`Math.log2`, corrected, and a multiplication by a power of two). Sizes up to
 * 2^53 are exact; bit tricks never touch a byte address.
 */
import {
  CLASS_COUNT,
  LIST_CLASS,
  LIST_NEXT,
  LIST_PREV,
  LIST_WORDS,
  NIL,
  ROWS,
  SECOND_LEVEL_COUNT,
  SECOND_LEVEL_LOG2,
  TWO_POW_31,
  TWO_POW_32,
} from './constants';

export { CLASS_COUNT, SECOND_LEVEL_COUNT, SECOND_LEVEL_LOG2 };

const INITIAL_IDS = 64;

/** 2^i for i in [0, 64). */
const POW2 = new Float64Array(64);
/** 2^-i for i in [0, 64): multiplying by it is exact and cheaper than dividing by 2^i. */
const INVERSE_POW2 = new Float64Array(64);
for (let i = 0; i < 64; i++) {
  POW2[i] = 2 ** i;
  INVERSE_POW2[i] = 2 ** -i;
}

/** Smallest size of each class. */
const CLASS_MIN = new Float64Array(CLASS_COUNT);
for (let c = 0; c < CLASS_COUNT; c++) {
  const row = Math.floor(c / SECOND_LEVEL_COUNT);
  const column = c % SECOND_LEVEL_COUNT;
  CLASS_MIN[c] = row === 0 ? column : POW2[row + SECOND_LEVEL_LOG2 - 1]! + column * POW2[row - 1]!;
}

/** ⌊log2 size⌋ for 1 ≤ size < 2^53, exact. */
export function floorLog2(size: number): number {
  if (size < TWO_POW_32) return 31 - Math.clz32(size);
  let e = Math.floor(Math.log2(size));
  if (POW2[e]! > size) e--;
  else if (POW2[e + 1]! <= size) e++;
  return e;
}

/** Class of a block of `size` units (0 ≤ size < 2^53, an integer): the class whose range holds it. */
export function sizeClass(size: number): number {
  // Larger counts take the float path out of line, so this one stays small enough to inline.
  if (size >= TWO_POW_31) return largeSizeClass(size);
  // An int32 count: first level from clz32; the count shifted down to its top six bits is
  // 32 + the second level, and the row of the first level is log − 4, hence (log − 5) × 32. With
  // the bit of 32 set, a count below 32 reads as log 5: row 0, the count itself, with no branch
  // (a random mix of sizes mispredicts one).
  const log = 31 - Math.clz32(size | SECOND_LEVEL_COUNT);
  return (log - SECOND_LEVEL_LOG2) * SECOND_LEVEL_COUNT + (size >> (log - SECOND_LEVEL_LOG2));
}

/** {@link sizeClass} of a count of 2^31 or more, exact in floating point. */
function largeSizeClass(size: number): number {
  const e = floorLog2(size);
  const column = Math.floor(size * INVERSE_POW2[e - SECOND_LEVEL_LOG2]!) - SECOND_LEVEL_COUNT;
  return (e - SECOND_LEVEL_LOG2 + 1) * SECOND_LEVEL_COUNT + column;
}

/** Smallest size in class `c`. */
export function classMinimum(c: number): number {
  return CLASS_MIN[c]!;
}

/** Lowest set bit of a non-zero 32-bit word, as a bit number. */
export function lowestBit(word: number): number {
  return 31 - Math.clz32(word & -word);
}

export class SegregatedLists {
  // `declare`d fields are assigned in the constructor only (no `undefined` first): V8 keeps their
  // representation exact and the hot paths free of checks.
  declare private readonly heads: Int32Array;
  declare private readonly rowMaps: Int32Array;
  /** Non-empty rows: bit r of word ⌊r/32⌋. */
  declare private readonly firstMaps: Int32Array;
  /**
   * Per id, {@link LIST_WORDS} words side by side: next and previous id in its class, and the
   * class (NIL when not filed). One array, so a link or an unlink loads one array's bounds and
   * touches one cache line per id instead of three.
   */
  declare private links: Int32Array;
  declare private size: number;

  /** @param initialIds - ids to reserve up front. @defaultValue 64 */
  constructor(initialIds: number = INITIAL_IDS) {
    const n = Math.max(4, Math.floor(initialIds));
    this.heads = new Int32Array(CLASS_COUNT).fill(NIL);
    this.rowMaps = new Int32Array(ROWS);
    this.firstMaps = new Int32Array(2);
    this.links = new Int32Array(n * LIST_WORDS).fill(NIL);
    this.size = 0;
  }

  /** Number of ids in the lists. */
  get count(): number {
    return this.size;
  }

  /** Class `id` is filed under, or {@link NIL} when it is not in the lists. */
  classOfId(id: number): number {
    const at = id * LIST_WORDS + LIST_CLASS;
    return at < this.links.length ? this.links[at]! : NIL;
  }

  /** First id of class `c`, or {@link NIL}. */
  head(c: number): number {
    return this.heads[c]!;
  }

  /** Next id in the same class after `id`, or {@link NIL}. */
  next(id: number): number {
    return this.links[id * LIST_WORDS + LIST_NEXT]!;
  }

  /** Files `id` under the class of `size` (at the head of its list). */
  insert(id: number, size: number): void {
    if (id * LIST_WORDS >= this.links.length) this.grow(id + 1);
    this.link(id, sizeClass(size));
    this.size++;
  }

  /** Removes `id` from its list. */
  remove(id: number): void {
    this.unlink(id);
    this.links[id * LIST_WORDS + LIST_CLASS] = NIL;
    this.size--;
  }

  /**
   * `id` (filed) now has size `size`: moves it to the head of that size's class when the class
   * changed, and leaves it where it is otherwise. Returns whether it moved.
   */
  refile(id: number, size: number): boolean {
    const c = sizeClass(size);
    if (c === this.links[id * LIST_WORDS + LIST_CLASS]) return false;
    this.unlink(id);
    this.link(id, c);
    return true;
  }

  /**
   * Like {@link refile}, with one class of slack: `id` stays where it is when it is filed in its
   * size's class or the class just above, and moves to its size's class otherwise. Returns whether
   * it moved.
   *
   * A block that shrinks just below a class boundary and grows back (a split of a large free block
   * undone by the next free, the commonest pair there is) then never changes lists. The price is
   * that the head of a class may be one class smaller than the class says: a caller that relies on
   * every block of a class holding the class minimum checks the size, and files a block found short
   * with {@link refile}.
   */
  settle(id: number, size: number): boolean {
    const c = sizeClass(size);
    const from = this.links[id * LIST_WORDS + LIST_CLASS]!;
    if (c === from || c + 1 === from) return false;
    this.unlink(id);
    this.link(id, c);
    return true;
  }

  /** Puts `id` at the head of class `c`'s list. */
  private link(id: number, c: number): void {
    const heads = this.heads;
    const links = this.links;
    const at = id * LIST_WORDS;
    const h = heads[c]!;
    links[at + LIST_NEXT] = h;
    links[at + LIST_PREV] = NIL;
    links[at + LIST_CLASS] = c;
    heads[c] = id;
    if (h !== NIL) links[h * LIST_WORDS + LIST_PREV] = id;
    else this.mark(c);
  }

  /** Takes `id` out of its class's list (its class word is left to the caller). */
  private unlink(id: number): void {
    const links = this.links;
    const at = id * LIST_WORDS;
    const n = links[at + LIST_NEXT]!;
    const p = links[at + LIST_PREV]!;
    if (n !== NIL) links[n * LIST_WORDS + LIST_PREV] = p;
    if (p !== NIL) links[p * LIST_WORDS + LIST_NEXT] = n;
    else {
      const c = links[at + LIST_CLASS]!;
      this.heads[c] = n;
      if (n === NIL) this.unmark(c);
    }
  }

  /** Class `c` just got its first id: sets its bits. */
  private mark(c: number): void {
    const row = c >> SECOND_LEVEL_LOG2;
    this.rowMaps[row] = this.rowMaps[row]! | (1 << (c & (SECOND_LEVEL_COUNT - 1)));
    this.firstMaps[row >> 5] = this.firstMaps[row >> 5]! | (1 << (row & 31));
  }

  /** Class `c` just lost its last id: clears its bits. */
  private unmark(c: number): void {
    const row = c >> SECOND_LEVEL_LOG2;
    const map = this.rowMaps[row]! & ~(1 << (c & (SECOND_LEVEL_COUNT - 1)));
    this.rowMaps[row] = map;
    if (map === 0) this.firstMaps[row >> 5] = this.firstMaps[row >> 5]! & ~(1 << (row & 31));
  }

  /** First non-empty class ≥ `c`, or {@link NIL}. O(1). */
  firstClassFrom(c: number): number {
    if (c >= CLASS_COUNT) return NIL;
    const row = c >> SECOND_LEVEL_LOG2;
    const inRow = this.rowMaps[row]! & (-1 << (c & (SECOND_LEVEL_COUNT - 1)));
    if (inRow !== 0) return (row << SECOND_LEVEL_LOG2) + lowestBit(inRow);
    return this.firstClassAfter(row);
  }

  /** First non-empty class in a row after `row`, or {@link NIL}: the rarer half of a search. */
  private firstClassAfter(row: number): number {
    const next = row + 1;
    if (next >= ROWS) return NIL;
    const firstMaps = this.firstMaps;
    let word = next >> 5;
    let bits = firstMaps[word]! & (-1 << (next & 31));
    if (bits === 0) {
      if (word !== 0) return NIL;
      bits = firstMaps[1]!;
      if (bits === 0) return NIL;
      word = 1;
    }
    const found = (word << 5) + lowestBit(bits);
    return (found << SECOND_LEVEL_LOG2) + lowestBit(this.rowMaps[found]!);
  }

  /**
   * First non-empty class whose every size is ≥ `size`: any id filed there holds `size` bytes
   * (TLSF's rounded-up search). {@link NIL} when there is none. O(1).
   */
  firstClassHolding(size: number): number {
    const c = sizeClass(size);
    return this.firstClassFrom(CLASS_MIN[c]! === size ? c : c + 1);
  }

  /** Highest non-empty class, or {@link NIL}. O(1). */
  lastClass(): number {
    for (let word = this.firstMaps.length - 1; word >= 0; word--) {
      const bits = this.firstMaps[word]!;
      if (bits !== 0) {
        const row = word * 32 + 31 - Math.clz32(bits);
        return row * SECOND_LEVEL_COUNT + 31 - Math.clz32(this.rowMaps[row]!);
      }
    }
    return NIL;
  }

  /** Empties every list. Keeps the arrays. */
  clear(): void {
    this.heads.fill(NIL);
    this.rowMaps.fill(0);
    this.firstMaps.fill(0);
    this.links.fill(NIL);
    this.size = 0;
  }

  private grow(atLeast: number): void {
    let n = this.links.length / LIST_WORDS;
    while (n < atLeast) n *= 2;
    const links = new Int32Array(n * LIST_WORDS).fill(NIL);
    links.set(this.links);
    this.links = links;
  }
}
