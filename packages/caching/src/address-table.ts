/**
 * Address → block slot, an open-addressing hash table in typed arrays (linear probing with
 * backward-shift deletion, so no tombstones). A JS `Map` keyed by addresses above 2^31 (heap
 * numbers, not small integers) costs about 200 ns per set/get/delete on Node 20; this costs a few.
 * Addresses stay exact doubles in the keys; the hash folds bits 9–31 of an address (a multiple of
 * 512) with its bits above 2^32, both taken by truncation.
 */

const EMPTY = -1;
const INITIAL_CAPACITY = 1024;
const TWO_POW_32 = 0x100000000;

export class AddressTable {
  private keys = new Float64Array(INITIAL_CAPACITY);
  private values = new Int32Array(INITIAL_CAPACITY).fill(EMPTY);
  private mask = INITIAL_CAPACITY - 1;
  /** 32 − log2(capacity): the hash takes the product's high bits, which mix every input bit. */
  private shift = 32 - Math.log2(INITIAL_CAPACITY);
  /** Entries in the table. */
  size = 0;

  private home(address: number): number {
    // Bits 9–31 of the address and the bits above 2^32: truncations, no division by a non-power
    // of two and no floating-point remainder (a library call).
    const low = address >>> 9;
    const high = (address / TWO_POW_32) | 0;
    return Math.imul(low ^ Math.imul(high, 0x85ebca6b), 0x9e3779b1) >>> this.shift;
  }

  /** The slot stored for `address`, or -1. */
  get(address: number): number {
    const keys = this.keys;
    const values = this.values;
    const mask = this.mask;
    for (let i = this.home(address); ; i = (i + 1) & mask) {
      const v = values[i]!;
      if (v === EMPTY) return EMPTY;
      if (keys[i] === address) return v;
    }
  }

  /** Stores `slot` (≥ 0) for `address`, which must not be in the table. */
  set(address: number, slot: number): void {
    if ((this.size + 1) * 2 > this.values.length) this.rehash(this.values.length * 2);
    const values = this.values;
    const mask = this.mask;
    let i = this.home(address);
    while (values[i] !== EMPTY) i = (i + 1) & mask;
    this.keys[i] = address;
    values[i] = slot;
    this.size++;
  }

  /** Removes `address`; returns its slot, or -1 when absent. */
  delete(address: number): number {
    const keys = this.keys;
    const values = this.values;
    const mask = this.mask;
    let i = this.home(address);
    for (;;) {
      const v = values[i]!;
      if (v === EMPTY) return EMPTY;
      if (keys[i] === address) break;
      i = (i + 1) & mask;
    }
    const found = values[i]!;
    // Backward-shift: pull later entries of the probe run into the hole.
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (values[j] === EMPTY) break;
      const k = this.home(keys[j]!);
      const between = i <= j ? i < k && k <= j : i < k || k <= j;
      if (between) continue;
      keys[i] = keys[j]!;
      values[i] = values[j]!;
      i = j;
    }
    values[i] = EMPTY;
    this.size--;
    return found;
  }

  /** Forgets every entry. */
  clear(): void {
    this.values.fill(EMPTY);
    this.size = 0;
  }

  private rehash(capacity: number): void {
    const keys = this.keys;
    const values = this.values;
    this.keys = new Float64Array(capacity);
    this.values = new Int32Array(capacity).fill(EMPTY);
    this.mask = capacity - 1;
    this.shift = 32 - Math.log2(capacity);
    this.size = 0;
    for (let i = 0; i < values.length; i++) if (values[i] !== EMPTY) this.set(keys[i]!, values[i]!);
  }
}
