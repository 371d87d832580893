/**
 * Address → block lookup: an open-addressing hash table in typed arrays (linear probing,
 * backward-shift deletion, so no tombstones), doubling when it would pass its load limit: a quarter
 * full up to {@link SPARSE_BUCKETS} buckets, half full above. A small table (up to 16,384 entries,
 * 1 MiB at most) then rarely probes past an entry's home bucket, and every lookup of a random
 * free, which a sparser table serves from its first bucket, is cheaper (good fit on a random mix
 * of 5,000 live blocks: 10 % less time per call); a large one keeps to 32 bytes per entry at most.
 *
 * A bucket's key and value sit side by side in one `Float64Array` (16 bytes a bucket), so a probe
 * loads one array and a hit reads one cache line. A removal that leaves the next bucket empty, the
 * common case in a sparse table, clears its bucket in place; only a removal inside a longer probe
 * run calls the backward shift.
 *
 * A JavaScript `Map` costs about 60 ns per set-and-delete pair once entries come and go (its
 * deleted entries are compacted by rehashing); this table costs a few, and allocates nothing per
 * operation.
 *
 * Keys are non-negative safe integers (addresses, or better units such as granule or page
 * indices), compared exactly as doubles. A key below 2^31, the common case once a caller keys by
 * units, is hashed with one multiplication (Fibonacci hashing): no float is split or mixed. A
 * larger key is split exactly into its high and low words by multiplication with 2^-32 (never
 * truncated by a bitwise operator), then the words are mixed.
 *
 * ```
 *  bucket:   0        1        2        3        4        5        6        7
 *  entries: [· ·] [0x1040 7] [· ·] [0x2000 2] [0x1000 0] [· ·] [· ·] [0x3080 5]   key, value
 * ```
 */
import { EMPTY, NIL, TWO_POW_31, TWO_POW_32, TWO_POW_MINUS_32 } from './constants';

const INITIAL_BUCKETS = 64;
/** Largest table kept at most a quarter full (2^16 buckets); larger ones are kept half full. */
const SPARSE_BUCKETS = 65536;

/** Entries a table of `buckets` buckets holds before it doubles. */
function loadLimit(buckets: number): number {
  return buckets <= SPARSE_BUCKETS ? buckets >> 2 : buckets >> 1;
}

export class AddressMap {
  // `declare`d fields are assigned in the constructor only: no `undefined` first, so V8 keeps
  // their representation (Smi, typed array) exact.
  /**
   * Bucket i's key at `2i` ({@link EMPTY} when the bucket is free) and its value at `2i + 1`: a
   * probe reads one array and, on a hit, one cache line.
   */
  declare private entries: Float64Array;
  /** Twice the bucket count less 2: `(i + 2) & mask` steps to the next bucket's key, wrapping. */
  declare private mask: number;
  declare private shift: number;
  declare private count: number;
  /** Entries the table holds before it doubles ({@link loadLimit}). */
  declare private limit: number;

  /** @param initialBuckets - buckets to start with (rounded up to a power of two). @defaultValue 64 */
  constructor(initialBuckets: number = INITIAL_BUCKETS) {
    let n = 8;
    while (n < initialBuckets) n *= 2;
    this.entries = new Float64Array(2 * n).fill(EMPTY);
    this.mask = 2 * n - 2;
    this.shift = Math.clz32(n) + 1;
    this.count = 0;
    this.limit = loadLimit(n);
  }

  /** Number of entries. */
  get size(): number {
    return this.count;
  }

  /** Value stored for `address`, or {@link NIL}. */
  get(address: number): number {
    if (!(address >= 0)) return NIL;
    const entries = this.entries;
    // Keys below 2^31 hashed here (as in home): lookups are the hot path of every free.
    let i =
      address < TWO_POW_31
        ? (Math.imul(address, 0x9e3779b1) >>> this.shift) << 1
        : this.home(address);
    for (; ; i = (i + 2) & this.mask) {
      const k = entries[i]!;
      if (k === address) return entries[i + 1]!;
      if (k === EMPTY) return NIL;
    }
  }

  /** Whether `address` has an entry. */
  has(address: number): boolean {
    return this.get(address) !== NIL;
  }

  /** Stores `value` (≥ 0) for `address` (a non-negative safe integer), replacing any entry. */
  set(address: number, value: number): void {
    if (this.count >= this.limit) this.grow();
    const entries = this.entries;
    let i =
      address < TWO_POW_31
        ? (Math.imul(address, 0x9e3779b1) >>> this.shift) << 1
        : this.home(address);
    for (; ; i = (i + 2) & this.mask) {
      const k = entries[i]!;
      if (k === EMPTY) {
        entries[i] = address;
        entries[i + 1] = value;
        this.count++;
        return;
      }
      if (k === address) {
        entries[i + 1] = value;
        return;
      }
    }
  }

  /** Removes the entry of `address` and returns its value, or {@link NIL} when there was none. */
  take(address: number): number {
    if (!(address >= 0)) return NIL;
    const entries = this.entries;
    let i =
      address < TWO_POW_31
        ? (Math.imul(address, 0x9e3779b1) >>> this.shift) << 1
        : this.home(address);
    for (;;) {
      const k = entries[i]!;
      if (k === address) break;
      if (k === EMPTY) return NIL;
      i = (i + 2) & this.mask;
    }
    const value = entries[i + 1]!;
    this.count--;
    // Most runs end at the entry taken (the table is sparse): the backward shift is out of line.
    if (entries[(i + 2) & this.mask] === EMPTY) entries[i] = EMPTY;
    else this.closeHole(i);
    return value;
  }

  /**
   * Empties bucket word `hole` by backward shift: later entries of its probe run move into the
   * hole when their home allows, so no tombstone is left.
   */
  private closeHole(at: number): void {
    const entries = this.entries;
    const mask = this.mask;
    let hole = at;
    for (let j = (at + 2) & mask; ; j = (j + 2) & mask) {
      const k = entries[j]!;
      if (k === EMPTY) break;
      const h = this.home(k);
      // Entry j may move to the hole when its home is not cyclically within (hole, j].
      if (hole <= j ? h <= hole || h > j : h <= hole && h > j) {
        entries[hole] = k;
        entries[hole + 1] = entries[j + 1]!;
        hole = j;
      }
    }
    entries[hole] = EMPTY;
  }

  /** Calls `visit` with every entry's key and value, in no particular order. */
  forEach(visit: (key: number, value: number) => void): void {
    const entries = this.entries;
    for (let i = 0; i < entries.length; i += 2) {
      const k = entries[i]!;
      if (k !== EMPTY) visit(k, entries[i + 1]!);
    }
  }

  /** Removes every entry. Keeps the arrays. */
  clear(): void {
    this.entries.fill(EMPTY);
    this.count = 0;
  }

  /** Index in {@link entries} of the bucket a key hashes to (twice the bucket number). */
  private home(key: number): number {
    // Keys below 2^31 are hashed as one 32-bit word (exact: they fit in an int32).
    if (key < TWO_POW_31) return (Math.imul(key, 0x9e3779b1) >>> this.shift) << 1;
    // Multiplying by 2^-32 is exact (a power of two) and cheaper than dividing.
    const high = Math.floor(key * TWO_POW_MINUS_32);
    const low = key - high * TWO_POW_32;
    return (Math.imul(low ^ Math.imul(high, 0x85ebca6b), 0x9e3779b1) >>> this.shift) << 1;
  }

  private grow(): void {
    const entries = this.entries;
    const n = entries.length; // twice the buckets: the new bucket count
    this.entries = new Float64Array(2 * n).fill(EMPTY);
    this.mask = 2 * n - 2;
    this.shift = Math.clz32(n) + 1;
    this.count = 0;
    this.limit = loadLimit(n);
    for (let i = 0; i < entries.length; i += 2) {
      const k = entries[i]!;
      if (k !== EMPTY) this.set(k, entries[i + 1]!);
    }
  }
}
