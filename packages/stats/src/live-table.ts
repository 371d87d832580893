/**
 * LiveTable: the requested and usable size of every live block, keyed by address, in an
 * open-addressing hash table over one `Float64Array` (linear probing, backward-shift deletion).
 *
 * Why not a `Map`: addresses above 2^31 are not small integers, so a `Map` boxes every key into a
 * heap number; this table stores keys as raw doubles and allocates only when it grows, so the
 * counting hot path creates no garbage.
 *
 * Hashing: an address is split exactly into two 32-bit words by multiplying by 2^-32 and
 * subtracting (no bitwise operator touches the address itself); only those words are mixed with
 * `Math.imul` (Fibonacci hashing). `insert` and `find` repeat the hash inline: they run once per
 * allocation and free, and a call of their own would cost more than the hash.
 */

/** Marks an empty slot. Addresses are never negative. */
const EMPTY = -1;
/** Doubles per slot: address, requested bytes, usable bytes. */
const STRIDE = 3;
/** Grow when more than this fraction of the slots is used: short probe sequences. */
const MAX_LOAD = 0.5;
/** Smallest table, as a power of two. */
const MIN_BITS = 6;
/** 2^32 / golden ratio: Fibonacci hashing multiplier. */
const GOLDEN = 0x9e3779b1;
// `home`, `insert` and `find` spell these constants and 2^32, 2^-32 (`TWO_POW_32` and
// `INV_TWO_POW_32` of @allot/core) out: the build does not inline every numeric `const`, nor one
// imported from another package, and Node 20 loads and checks a module-level one on each use.

export class LiveTable {
  private slots: Float64Array;
  private bits: number;
  private shift: number;
  private mask: number;
  /** Entries at which the table grows. */
  private limit: number;
  private used = 0;

  constructor(bits = 10) {
    this.bits = Math.max(bits, MIN_BITS);
    this.shift = 32 - this.bits;
    this.mask = 2 ** this.bits - 1;
    this.limit = (this.mask + 1) * MAX_LOAD;
    this.slots = LiveTable.emptySlots(this.mask + 1);
  }

  /** Live entries. */
  get size(): number {
    return this.used;
  }

  private static emptySlots(count: number): Float64Array {
    const slots = new Float64Array(count * STRIDE);
    for (let i = 0; i < slots.length; i += STRIDE) slots[i] = EMPTY;
    return slots;
  }

  private home(address: number): number {
    const high = Math.floor(address * 2.3283064365386963e-10); // 2^-32
    const low = address - high * 4294967296; // 2^32
    return Math.imul(low ^ Math.imul(high, GOLDEN), GOLDEN) >>> this.shift;
  }

  /** Slot index of `address`, or -1. */
  find(address: number): number {
    const slots = this.slots;
    const mask = this.mask;
    // `home`, by hand: this runs on every free.
    const high = Math.floor(address * 2.3283064365386963e-10); // 2^-32
    let i =
      Math.imul((address - high * 4294967296) ^ Math.imul(high, 0x9e3779b1), 0x9e3779b1) >>>
      this.shift;
    for (;;) {
      const key = slots[i * STRIDE]!;
      if (key === address) return i;
      if (key === EMPTY) return -1;
      i = (i + 1) & mask;
    }
  }

  requestedAt(index: number): number {
    return this.slots[index * STRIDE + 1]!;
  }

  usableAt(index: number): number {
    return this.slots[index * STRIDE + 2]!;
  }

  /** Records a live block (the address must not be present). */
  insert(address: number, requested: number, usable: number): void {
    if (this.used >= this.limit) this.grow();
    const slots = this.slots;
    const mask = this.mask;
    // `home`, by hand: this runs on every allocation.
    const high = Math.floor(address * 2.3283064365386963e-10); // 2^-32
    let i =
      Math.imul((address - high * 4294967296) ^ Math.imul(high, 0x9e3779b1), 0x9e3779b1) >>>
      this.shift;
    while (slots[i * STRIDE] !== EMPTY) i = (i + 1) & mask;
    const at = i * STRIDE;
    slots[at] = address;
    slots[at + 1] = requested;
    slots[at + 2] = usable;
    this.used++;
  }

  /** Removes the entry in slot `index` (from `find`). */
  removeAt(index: number): void {
    const slots = this.slots;
    // Usually the next slot is empty and nothing has to move back.
    if (slots[((index + 1) & this.mask) * STRIDE] === EMPTY) slots[index * STRIDE] = EMPTY;
    else this.shiftBack(index);
    this.used--;
  }

  /** Empties slot `index`, shifting later entries of its run back into the hole. */
  private shiftBack(index: number): void {
    const slots = this.slots;
    const mask = this.mask;
    let hole = index;
    let j = (index + 1) & mask;
    while (slots[j * STRIDE] !== EMPTY) {
      const key = slots[j * STRIDE]!;
      const k = this.home(key);
      // Move the entry into the hole unless its home lies cyclically in (hole, j].
      if (((j - k) & mask) >= ((j - hole) & mask)) {
        slots[hole * STRIDE] = key;
        slots[hole * STRIDE + 1] = slots[j * STRIDE + 1]!;
        slots[hole * STRIDE + 2] = slots[j * STRIDE + 2]!;
        hole = j;
      }
      j = (j + 1) & mask;
    }
    slots[hole * STRIDE] = EMPTY;
  }

  /** Forgets every entry (keeps the table's size). */
  clear(): void {
    for (let i = 0; i < this.slots.length; i += STRIDE) this.slots[i] = EMPTY;
    this.used = 0;
  }

  /** Calls `visit` for every entry (any order). */
  forEach(visit: (address: number, requested: number, usable: number) => void): void {
    const slots = this.slots;
    for (let i = 0; i < slots.length; i += STRIDE) {
      if (slots[i] !== EMPTY) visit(slots[i]!, slots[i + 1]!, slots[i + 2]!);
    }
  }

  private grow(): void {
    const old = this.slots;
    this.bits++;
    this.shift = 32 - this.bits;
    this.mask = 2 ** this.bits - 1;
    this.limit = (this.mask + 1) * MAX_LOAD;
    this.slots = LiveTable.emptySlots(this.mask + 1);
    this.used = 0;
    for (let i = 0; i < old.length; i += STRIDE) {
      if (old[i] !== EMPTY) this.insert(old[i]!, old[i + 1]!, old[i + 2]!);
    }
  }
}
