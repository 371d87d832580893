/**
 * Address → block lookup: an open-addressing hash table in typed arrays (linear probing,
 * backward-shift deletion, so no tombstones), doubling when it would pass its load limit: a quarter
 * full up to {@link SPARSE_BUCKETS} buckets, half full above. A small table (up to 16,384 entries,
 * 768 KiB at most) then rarely probes past an entry's home bucket, and every lookup of a random
 * free, which a sparser table serves from its first bucket, is cheaper (good fit on a random mix
 * of 5,000 live blocks: 10 % less time per call); a large one keeps to 24 bytes per entry at most.
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
 *  bucket:  0      1      2      3      4      5      6      7
 *  key:     ·    0x1040   ·    0x2000 0x1000   ·      ·    0x3080
 *  value:        slot 7        slot 2 slot 0               slot 5
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
  declare private keys: Float64Array;
  declare private values: Int32Array;
  declare private mask: number;
  declare private shift: number;
  declare private count: number;
  /** Entries the table holds before it doubles ({@link loadLimit}). */
  declare private limit: number;

  /** @param initialBuckets - buckets to start with (rounded up to a power of two). @defaultValue 64 */
  constructor(initialBuckets: number = INITIAL_BUCKETS) {
    let n = 8;
    while (n < initialBuckets) n *= 2;
    this.keys = new Float64Array(n).fill(EMPTY);
    this.values = new Int32Array(n);
    this.mask = n - 1;
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
    const keys = this.keys;
    const mask = this.mask;
    // Keys below 2^31 hashed here (as in home): lookups are the hot path of every free.
    let i =
      address < TWO_POW_31 ? Math.imul(address, 0x9e3779b1) >>> this.shift : this.home(address);
    for (; ; i = (i + 1) & mask) {
      const k = keys[i]!;
      if (k === address) return this.values[i]!;
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
    const keys = this.keys;
    const mask = this.mask;
    let i =
      address < TWO_POW_31 ? Math.imul(address, 0x9e3779b1) >>> this.shift : this.home(address);
    for (; ; i = (i + 1) & mask) {
      const k = keys[i]!;
      if (k === EMPTY) {
        keys[i] = address;
        this.values[i] = value;
        this.count++;
        return;
      }
      if (k === address) {
        this.values[i] = value;
        return;
      }
    }
  }

  /** Removes the entry of `address` and returns its value, or {@link NIL} when there was none. */
  take(address: number): number {
    if (!(address >= 0)) return NIL;
    const keys = this.keys;
    const values = this.values;
    const mask = this.mask;
    let i =
      address < TWO_POW_31 ? Math.imul(address, 0x9e3779b1) >>> this.shift : this.home(address);
    for (;;) {
      const k = keys[i]!;
      if (k === address) break;
      if (k === EMPTY) return NIL;
      i = (i + 1) & mask;
    }
    const value = values[i]!;
    // Backward shift: pull later entries of the probe run into the hole when their home allows.
    let hole = i;
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const k = keys[j]!;
      if (k === EMPTY) break;
      const h = k < TWO_POW_31 ? Math.imul(k, 0x9e3779b1) >>> this.shift : this.home(k);
      // Entry j may move to the hole when its home is not cyclically within (hole, j].
      if (hole <= j ? h <= hole || h > j : h <= hole && h > j) {
        keys[hole] = k;
        values[hole] = values[j]!;
        hole = j;
      }
    }
    keys[hole] = EMPTY;
    this.count--;
    return value;
  }

  /** Calls `visit` with every entry's key and value, in no particular order. */
  forEach(visit: (key: number, value: number) => void): void {
    const keys = this.keys;
    const values = this.values;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      if (k !== EMPTY) visit(k, values[i]!);
    }
  }

  /** Removes every entry. Keeps the arrays. */
  clear(): void {
    this.keys.fill(EMPTY);
    this.count = 0;
  }

  /** Bucket a key hashes to. */
  private home(key: number): number {
    // Keys below 2^31 are hashed as one 32-bit word (exact: they fit in an int32).
    if (key < TWO_POW_31) return Math.imul(key, 0x9e3779b1) >>> this.shift;
    // Multiplying by 2^-32 is exact (a power of two) and cheaper than dividing.
    const high = Math.floor(key * TWO_POW_MINUS_32);
    const low = key - high * TWO_POW_32;
    return Math.imul(low ^ Math.imul(high, 0x85ebca6b), 0x9e3779b1) >>> this.shift;
  }

  private grow(): void {
    const keys = this.keys;
    const values = this.values;
    const n = keys.length * 2;
    this.keys = new Float64Array(n).fill(EMPTY);
    this.values = new Int32Array(n);
    this.mask = n - 1;
    this.shift = Math.clz32(n) + 1;
    this.count = 0;
    this.limit = loadLimit(n);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      if (k !== EMPTY) this.set(k, values[i]!);
    }
  }
}
