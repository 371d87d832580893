/**
 * PageMap: page number → slab id, an open-addressing hash table in typed arrays.
 *
 * A slab is aligned to the page size and covers whole pages, so the slab that holds an address is
 * the one registered for `floor(address / pageSize)`. Page numbers can exceed 2^32 (addresses go to
 * 2^53), so the hash splits a page number into its low and high 32-bit halves by exact float
 * arithmetic before mixing them (Fibonacci hashing); the 32-bit operators act on those halves and
 * on table indices only. Linear probing with backward-shift deletion: no tombstones, and a lookup
 * allocates nothing. The table doubles (the only allocation) when it is half full.
 */

const EMPTY = -1;
const TWO_POW_32 = 2 ** 32;
const INV_TWO_POW_32 = 2 ** -32;
/** Smallest table, in slots (a power of two). */
const INITIAL_SLOTS = 64;

export class PageMap {
  private keys: Float64Array;
  private values: Int32Array;
  /** log2 of the number of slots. */
  private bits: number;
  private mask: number;
  private size = 0;

  constructor() {
    this.keys = new Float64Array(INITIAL_SLOTS).fill(EMPTY);
    this.values = new Int32Array(INITIAL_SLOTS);
    this.bits = Math.log2(INITIAL_SLOTS);
    this.mask = INITIAL_SLOTS - 1;
  }

  /** Slab id registered for `page`, or −1. */
  get(page: number): number {
    const keys = this.keys;
    let slot = this.slotOf(page);
    for (;;) {
      const key = keys[slot]!;
      if (key === page) return this.values[slot]!;
      if (key === EMPTY) return -1;
      slot = (slot + 1) & this.mask;
    }
  }

  /** Registers `page` → `id` (the page must not be registered). */
  set(page: number, id: number): void {
    if ((this.size + 1) * 2 > this.keys.length) this.grow();
    this.insert(page, id);
    this.size++;
  }

  /** Forgets `page` (a no-op when it is not registered). */
  delete(page: number): void {
    const keys = this.keys;
    const values = this.values;
    const mask = this.mask;
    let slot = this.slotOf(page);
    while (keys[slot] !== page) {
      if (keys[slot] === EMPTY) return;
      slot = (slot + 1) & mask;
    }
    // Backward-shift: pull later entries of the cluster into the hole when their home allows.
    let hole = slot;
    let next = (hole + 1) & mask;
    while (keys[next] !== EMPTY) {
      const home = this.slotOf(keys[next]!);
      // Move `next` into `hole` unless its home lies cyclically in (hole, next].
      const distanceToNext = (next - home) & mask;
      const distanceToHole = (hole - home) & mask;
      if (distanceToHole < distanceToNext) {
        keys[hole] = keys[next]!;
        values[hole] = values[next]!;
        hole = next;
      }
      next = (next + 1) & mask;
    }
    keys[hole] = EMPTY;
    this.size--;
  }

  clear(): void {
    this.keys = new Float64Array(INITIAL_SLOTS).fill(EMPTY);
    this.values = new Int32Array(INITIAL_SLOTS);
    this.bits = Math.log2(INITIAL_SLOTS);
    this.mask = INITIAL_SLOTS - 1;
    this.size = 0;
  }

  private slotOf(page: number): number {
    const high = Math.floor(page * INV_TWO_POW_32);
    const low = page - high * TWO_POW_32;
    const mixed = Math.imul(low ^ Math.imul(high, 0x85ebca6b), 0x9e3779b1);
    return mixed >>> (32 - this.bits);
  }

  private insert(page: number, id: number): void {
    let slot = this.slotOf(page);
    while (this.keys[slot] !== EMPTY) slot = (slot + 1) & this.mask;
    this.keys[slot] = page;
    this.values[slot] = id;
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldValues = this.values;
    const slots = oldKeys.length * 2;
    this.keys = new Float64Array(slots).fill(EMPTY);
    this.values = new Int32Array(slots);
    this.bits++;
    this.mask = slots - 1;
    for (let i = 0; i < oldKeys.length; i++) {
      if (oldKeys[i] !== EMPTY) this.insert(oldKeys[i]!, oldValues[i]!);
    }
  }
}
