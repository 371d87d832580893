/**
 * A map from addresses (non-negative integers up to 2^53) to int32 values, for readers that follow
 * which blocks are live: a `Map<number, number>` boxes each address above 2^31 (every GPU address)
 * and allocates as it grows, half a million times on a big snapshot. Open addressing over typed
 * arrays, linear probing, deletion by shifting the probe run back (no tombstones).
 */

const EMPTY = 0;
const USED = 1;

export class AddressTable {
  private keys: Float64Array;
  private values: Int32Array;
  private states: Uint8Array;
  private mask: number;
  /** Entries held. */
  size = 0;

  /** @param expected - entries expected at once (the table grows past them). */
  constructor(expected = 16) {
    let capacity = 16;
    while (capacity < expected * 2) capacity *= 2;
    this.keys = new Float64Array(capacity);
    this.values = new Int32Array(capacity);
    this.states = new Uint8Array(capacity);
    this.mask = capacity - 1;
  }

  /** The value of `address`, or -1 when it is not in the table (values are never negative). */
  get(address: number): number {
    const keys = this.keys;
    const states = this.states;
    for (let slot = hashOf(address) & this.mask; ; slot = (slot + 1) & this.mask) {
      if (states[slot] === EMPTY) return -1;
      if (keys[slot] === address) return this.values[slot]!;
    }
  }

  has(address: number): boolean {
    return this.get(address) >= 0;
  }

  /** Sets `address` to `value` (≥ 0). */
  set(address: number, value: number): void {
    const keys = this.keys;
    const states = this.states;
    let slot = hashOf(address) & this.mask;
    for (; states[slot] !== EMPTY; slot = (slot + 1) & this.mask) {
      if (keys[slot] === address) {
        this.values[slot] = value;
        return;
      }
    }
    keys[slot] = address;
    this.values[slot] = value;
    states[slot] = USED;
    this.size++;
    if (this.size * 2 > keys.length) this.grow();
  }

  /** Removes `address`; returns whether it was there. */
  delete(address: number): boolean {
    const keys = this.keys;
    const states = this.states;
    const mask = this.mask;
    let slot = hashOf(address) & mask;
    for (; ; slot = (slot + 1) & mask) {
      if (states[slot] === EMPTY) return false;
      if (keys[slot] === address) break;
    }
    // Shift the rest of the probe run back over the hole, so that every entry stays reachable.
    let hole = slot;
    for (let next = (hole + 1) & mask; states[next] !== EMPTY; next = (next + 1) & mask) {
      const home = hashOf(keys[next]!) & mask;
      // The entry at `next` may move to `hole` when its home is not within (hole, next].
      const between = hole <= next ? home > hole && home <= next : home > hole || home <= next;
      if (between) continue;
      keys[hole] = keys[next]!;
      this.values[hole] = this.values[next]!;
      hole = next;
    }
    states[hole] = EMPTY;
    this.size--;
    return true;
  }

  private grow(): void {
    const { keys, values, states } = this;
    const capacity = keys.length * 2;
    this.keys = new Float64Array(capacity);
    this.values = new Int32Array(capacity);
    this.states = new Uint8Array(capacity);
    this.mask = capacity - 1;
    this.size = 0;
    for (let slot = 0; slot < keys.length; slot++) {
      if (states[slot] === USED) this.set(keys[slot]!, values[slot]!);
    }
  }
}

/** A hash of an address: its low and high 32 bits mixed (addresses share their low bits' zeros). */
function hashOf(address: number): number {
  const low = address >>> 0;
  const high = (address / 4294967296) >>> 0;
  let h = Math.imul(low ^ (low >>> 16), 0x85ebca6b) ^ Math.imul(high, 0x9e3779b1);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
