/**
 * The memo slots a fast path's read will store, from the memo's next slot on, in the order the
 * opcodes one by one would store them: kept aside while the bytes are decoded (nothing in the memo
 * changes unless the read is committed), and looked up when an opcode later in the same read refers
 * to one of them.
 *
 * ```
 *  base      SELF     the container read: the dict, or the frames list
 *  base + 1  STRING   a string memoized ('filename' value, say)
 *  base + 2  FRAMES   the frames list, value of pair `at`; its items' slots follow:
 *  base + 3  FRAME    a frame dict written anew in it, as its frame `at`
 *  …         EMPTY    an empty list, value of pair `at`
 * ```
 */

export const SELF = 0;
export const STRING = 1;
export const FRAME = 2;
export const EMPTY = 3;
export const FRAMES = 4;

/** Pending memo slots (see the module comment). */
export class Pending {
  /** The slot of the first (the memo's next). */
  base = 0;
  count = 0;
  /** Characters of the strings among them. */
  stringBytes = 0;
  readonly kind: Uint8Array;
  /** A frame's id; the pair of an empty list or of the frames list. */
  readonly at: Int32Array;
  readonly strings: (string | undefined)[];

  constructor(most: number) {
    this.kind = new Uint8Array(most);
    this.at = new Int32Array(most);
    this.strings = new Array<string | undefined>(most).fill(undefined);
  }

  /** Starts a read whose first slot is `base`; false when `most` slots could not all fit. */
  reset(base: number): void {
    this.base = base;
    this.count = 0;
    this.stringBytes = 0;
  }

  /** One more slot, of `kind` (at `at`); false when there is no room. */
  add(kind: number, at = 0): boolean {
    if (this.count === this.kind.length) return false;
    this.kind[this.count] = kind;
    this.at[this.count++] = at;
    return true;
  }

  /** One more slot holding string `text`; false when there is no room. */
  addString(text: string): boolean {
    if (!this.add(STRING)) return false;
    this.strings[this.count - 1] = text;
    this.stringBytes += text.length;
    return true;
  }

  /** The string a memo reference to slot `index` reads, when it is one of these; else undefined. */
  stringAt(index: number): string | undefined {
    const k = index - this.base;
    return k >= 0 && k < this.count && this.kind[k] === STRING ? this.strings[k] : undefined;
  }

  /** The frame a memo reference to slot `index` reads, when it is one of these; else -1. */
  frameAt(index: number): number {
    const k = index - this.base;
    return k >= 0 && k < this.count && this.kind[k] === FRAME ? this.at[k]! : -1;
  }
}
