/**
 * The memo of a streamed pickle, four bytes a slot. A snapshot with stacks memoizes tens of
 * millions of values (every entry, every stack list, every frame dict that is not shared), and most
 * of them are consumed or interned as soon as their parent takes them; so a slot holds an int:
 *
 * ```
 *  0            never stored
 *  -1           consumed (FORGOTTEN): the value was read once and dropped
 *  2k + 1       ref k: a value the hooks interned (a frame), resolved through `ref(k)`
 *  2k, k ≥ 1    objects[k]: any other value (a string, a container still being built)
 *  -2 - t       texts[t]: a short string, kept once whatever the slots that hold it
 * ```
 *
 * `objects` slots are reused once their value is dropped, so the array holds only live values.
 * A snapshot memoizes the same short strings again and again (an entry's `compile_context`, 'N/A',
 * is a new string each time): each is kept once, and those the hooks name (the keys they look for)
 * are kept as the very strings the hooks compare with, which a comparison then finds at once.
 */

import { freeBuffers } from './free-buffers';

/** The value a consumed slot of the memo holds. */
export const FORGOTTEN = Symbol('forgotten');

/** Longest string kept once; most strings kept so. */
const TEXT_LENGTH = 32;
const MOST_TEXTS = 1 << 16;

/** Memo slots per chunk. */
const CHUNK_BITS = 16;
const CHUNK = 1 << CHUNK_BITS;
const MASK = CHUNK - 1;

/** A streamed pickle's memo. */
export class Memo {
  private readonly chunks: (Int32Array | undefined)[] = [];
  private readonly objects: unknown[] = [undefined];
  private readonly free: number[] = [];
  /** Slots stored: Python's `len(memo)`, the index `MEMOIZE` stores at next. */
  count = 0;
  /** One past the largest slot stored. */
  private top = 0;
  /** Times a stored slot was stored again (by `put`): what a cache of slots' values checks. */
  version = 0;
  private readonly texts: string[] = [];
  private readonly textIds = new Map<string, number>();

  /** @param known - strings to keep as these very strings (see the module comment). */
  constructor(
    private readonly ref: (id: number) => unknown,
    known: readonly string[] = [],
  ) {
    for (const text of known) this.text(text);
  }

  /** The index `MEMOIZE` stores at next (see {@link count}). */
  get next(): number {
    return this.count;
  }

  /**
   * Whether the slots stored are `[0, count)`, as a pickle that memoizes with `MEMOIZE` alone
   * leaves them: the fast paths, which take the next slots to be free, read only then.
   */
  get dense(): boolean {
    return this.top === this.count;
  }

  /** The value of slot `index`: undefined when never stored, {@link FORGOTTEN} when consumed. */
  get(index: number): unknown {
    const chunk = this.chunks[index >>> CHUNK_BITS];
    if (chunk === undefined) return undefined;
    const slot = chunk[index & MASK]!;
    if (slot > 0) return (slot & 1) === 1 ? this.ref(slot >>> 1) : this.objects[slot >>> 1];
    if (slot < -1) return this.texts[-2 - slot];
    return slot === 0 ? undefined : FORGOTTEN;
  }

  /** The slot's int (see the module comment): 0 when never stored, a ref's when positive odd. */
  raw(index: number): number {
    const chunk = this.chunks[index >>> CHUNK_BITS];
    return chunk === undefined ? 0 : chunk[index & MASK]!;
  }

  /** Stores `value` at `index`. */
  put(index: number, value: unknown): void {
    if (this.raw(index) !== 0) this.version++;
    if (typeof value === 'string' && value.length <= TEXT_LENGTH) {
      const t = this.text(value);
      if (t >= 0) {
        this.set(index, -2 - t);
        return;
      }
    }
    const free = this.free;
    const at = free.length > 0 ? free.pop()! : this.objects.length;
    this.objects[at] = value;
    this.set(index, at << 1);
  }

  /** Stores ref `id` (see the module comment) at `index`, in place of what is there. */
  putRef(index: number, id: number): void {
    this.set(index, (id << 1) | 1);
  }

  /**
   * Lets every slot go (the pickle is over): its memory is free for what comes next at once, not
   * at the collector's next full pass (see {@link freeBuffers}).
   */
  release(): void {
    freeBuffers(this.chunks.flatMap((chunk) => (chunk === undefined ? [] : [chunk.buffer])));
    this.chunks.length = 0;
    this.objects.length = 1;
    this.free.length = 0;
    this.texts.length = 0;
    this.textIds.clear();
  }

  /** Marks slot `index` consumed. */
  forget(index: number): void {
    this.set(index, -1);
  }

  /** The index of `text` in `texts`, added if new while there is room; else -1. */
  private text(text: string): number {
    let t = this.textIds.get(text);
    if (t === undefined) {
      if (this.texts.length >= MOST_TEXTS) return -1;
      t = this.texts.length;
      this.texts.push(text);
      this.textIds.set(text, t);
    }
    return t;
  }

  private set(index: number, slot: number): void {
    const c = index >>> CHUNK_BITS;
    while (this.chunks.length <= c) this.chunks.push(undefined);
    let chunk = this.chunks[c];
    if (chunk === undefined) {
      chunk = new Int32Array(CHUNK);
      this.chunks[c] = chunk;
    }
    const old = chunk[index & MASK]!;
    if (old === 0) this.count++;
    else if (old > 0 && (old & 1) === 0) {
      this.objects[old >>> 1] = undefined;
      this.free.push(old >>> 1);
    }
    chunk[index & MASK] = slot;
    if (index >= this.top) this.top = index + 1;
  }
}
