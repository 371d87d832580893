/**
 * Which of {@link BIN_COUNT} bins are non-empty, in three levels of bits, so the first non-empty bin
 * at or above any bin (and the highest one) is a handful of `Math.clz32`, however sparse the bins:
 *
 * ```
 *  top       one word      bit g: summary word g is non-zero            (8 bits used)
 *  summary   8 words       bit w & 31 of word w >> 5: bitmap word w is non-zero
 *  bitmap    256 words     bit b & 31 of word b >> 5: bin b is non-empty
 * ```
 *
 * Bins are small integers (sizes in granules), so every bit trick stays on int32 values.
 */
import { lowestBit, NIL } from '@allot/blocks';

/** Number of bins. */
export const BIN_COUNT = 8192;
const MAP_WORDS = BIN_COUNT / 32;
const SUMMARY_WORDS = MAP_WORDS / 32;

/** Index of the highest set bit of a non-zero int32. */
function highestBit(bits: number): number {
  return 31 - Math.clz32(bits);
}

export class BinBitmap {
  declare private readonly map: Int32Array;
  declare private readonly summary: Int32Array;
  declare private top: number;

  constructor() {
    this.map = new Int32Array(MAP_WORDS);
    this.summary = new Int32Array(SUMMARY_WORDS);
    this.top = 0;
  }

  /** Whether no bin is marked. */
  get empty(): boolean {
    return this.top === 0;
  }

  /** Marks bin `bin` (in `[0, BIN_COUNT)`) non-empty. */
  mark(bin: number): void {
    const word = bin >> 5;
    const bits = this.map[word]!;
    this.map[word] = bits | (1 << (bin & 31));
    if (bits !== 0) return;
    const group = word >> 5;
    const words = this.summary[group]!;
    this.summary[group] = words | (1 << (word & 31));
    if (words === 0) this.top |= 1 << group;
  }

  /** Marks bin `bin` empty. */
  unmark(bin: number): void {
    const word = bin >> 5;
    const bits = this.map[word]! & ~(1 << (bin & 31));
    this.map[word] = bits;
    if (bits !== 0) return;
    const group = word >> 5;
    const words = this.summary[group]! & ~(1 << (word & 31));
    this.summary[group] = words;
    if (words === 0) this.top &= ~(1 << group);
  }

  /** First marked bin ≥ `from` (any non-negative integer), or {@link NIL}. */
  next(from: number): number {
    if (from >= BIN_COUNT) return NIL;
    const map = this.map;
    let word = from >> 5;
    const bits = map[word]! & (-1 << (from & 31));
    if (bits !== 0) return (word << 5) + lowestBit(bits);
    // The first non-zero word after `word`: in the same summary word, else in a later one.
    const after = word + 1;
    let group = after >> 5;
    if (group < SUMMARY_WORDS) {
      const words = this.summary[group]! & (-1 << (after & 31));
      if (words !== 0) {
        word = (group << 5) + lowestBit(words);
        return (word << 5) + lowestBit(map[word]!);
      }
    }
    // group + 1 ≤ SUMMARY_WORDS = 8: the shift stays below 32.
    const groups = this.top & (-1 << (group + 1));
    if (groups === 0) return NIL;
    group = lowestBit(groups);
    word = (group << 5) + lowestBit(this.summary[group]!);
    return (word << 5) + lowestBit(map[word]!);
  }

  /** Highest marked bin, or {@link NIL}. */
  highest(): number {
    if (this.top === 0) return NIL;
    const group = highestBit(this.top);
    const word = (group << 5) + highestBit(this.summary[group]!);
    return (word << 5) + highestBit(this.map[word]!);
  }

  /** Unmarks every bin. */
  clear(): void {
    this.map.fill(0);
    this.summary.fill(0);
    this.top = 0;
  }
}
