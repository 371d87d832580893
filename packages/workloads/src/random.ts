/**
 * Seeded pseudo-random numbers: xoshiro128** (Blackman & Vigna) seeded through splitmix32.
 *
 * Why this generator: 128 bits of state in four int32 fields, a period of 2^128 − 1, good statistical
 * quality, and every step is a handful of `Math.imul`/shift operations on 32-bit integers, so it is
 * fast in V8 and produces the same sequence on every platform. The 32-bit operators here act on PRNG
 * state only, never on addresses or sizes.
 *
 * Every generator in this package takes a `seed`; the same seed always yields the same trace.
 */

const TWO_POW_32 = 0x1_0000_0000;
const TWO_POW_53 = 2 ** 53;

/** One splitmix32 step: turns a counter into a well-mixed 32-bit value (used only for seeding). */
function splitmix32(state: number): number {
  let z = (state + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
  z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
  return (z ^ (z >>> 15)) >>> 0;
}

function rotl(value: number, shift: number): number {
  return (value << shift) | (value >>> (32 - shift));
}

/** A deterministic random-number generator (xoshiro128**). Not for cryptography. */
export class Random {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  /**
   * @param seed - any safe integer (its low and high 32 bits both count); the same seed always
   * gives the same sequence. @defaultValue 1
   */
  constructor(seed = 1) {
    if (!Number.isSafeInteger(seed)) {
      throw new TypeError(`seed must be a safe integer, got ${String(seed)}`);
    }
    const low = (seed % TWO_POW_32) >>> 0;
    const high = Math.floor(seed / TWO_POW_32) >>> 0;
    let counter = low ^ splitmix32(high);
    this.s0 = splitmix32((counter = (counter + 0x9e3779b9) | 0));
    this.s1 = splitmix32((counter = (counter + 0x9e3779b9) | 0));
    this.s2 = splitmix32((counter = (counter + 0x9e3779b9) | 0));
    this.s3 = splitmix32((counter = (counter + 0x9e3779b9) | 0));
    // The all-zero state is the one state xoshiro never leaves.
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Next 32-bit unsigned integer, uniform in [0, 2^32). */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform float in [0, 1) with 53 bits of precision. */
  next(): number {
    const high = this.nextUint32() >>> 5; // 27 bits
    const low = this.nextUint32() >>> 6; // 26 bits
    return (high * 2 ** 26 + low) / TWO_POW_53;
  }

  /** Uniform integer in [min, max] (both inclusive, safe integers, `min ≤ max`). */
  integer(min: number, max: number): number {
    const span = max - min + 1;
    if (span <= TWO_POW_32) return min + Math.floor((this.nextUint32() / TWO_POW_32) * span);
    return min + Math.floor(this.next() * span);
  }

  /** Uniform index in [0, length). */
  index(length: number): number {
    return Math.floor((this.nextUint32() / TWO_POW_32) * length);
  }

  /** `true` with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /**
   * Integer in [min, max] whose logarithm is uniform: as many requests between 16 B and 32 B as
   * between 32 KiB and 64 KiB. `1 ≤ min ≤ max`.
   */
  logUniform(min: number, max: number): number {
    const value = Math.floor(min * Math.exp(this.next() * Math.log((max + 1) / min)));
    return Math.max(min, Math.min(max, value));
  }
}
