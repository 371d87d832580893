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
 * ```
 *
 * `objects` slots are reused once their value is dropped, so the array holds only live values.
 */

/** The value a consumed slot of the memo holds. */
export const FORGOTTEN = Symbol('forgotten');

/** Memo slots per chunk. */
const CHUNK_BITS = 16;
const CHUNK = 1 << CHUNK_BITS;
const MASK = CHUNK - 1;

/** A streamed pickle's memo. */
export class Memo {
  private readonly chunks: (Int32Array | undefined)[] = [];
  private readonly objects: unknown[] = [undefined];
  private readonly free: number[] = [];
  /** The index `MEMOIZE` stores at next: one past the largest stored. */
  next = 0;
  /** Slots stored. */
  count = 0;
  /** Times a stored slot was stored again (by `put`): what a cache of slots' values checks. */
  version = 0;

  constructor(private readonly ref: (id: number) => unknown) {}

  /** The value of slot `index`: undefined when never stored, {@link FORGOTTEN} when consumed. */
  get(index: number): unknown {
    const chunk = this.chunks[index >>> CHUNK_BITS];
    if (chunk === undefined) return undefined;
    const slot = chunk[index & MASK]!;
    if (slot > 0) return (slot & 1) === 1 ? this.ref(slot >>> 1) : this.objects[slot >>> 1];
    return slot === 0 ? undefined : FORGOTTEN;
  }

  /** The slot's int (see the module comment): 0 when never stored. */
  raw(index: number): number {
    const chunk = this.chunks[index >>> CHUNK_BITS];
    return chunk === undefined ? 0 : chunk[index & MASK]!;
  }

  /** Stores `value` at `index`. */
  put(index: number, value: unknown): void {
    if (this.raw(index) !== 0) this.version++;
    const free = this.free;
    const at = free.length > 0 ? free.pop()! : this.objects.length;
    this.objects[at] = value;
    this.set(index, at << 1);
  }

  /** Stores ref `id` (see the module comment) at `index`, in place of what is there. */
  putRef(index: number, id: number): void {
    this.set(index, (id << 1) | 1);
  }

  /** Marks slot `index` consumed. */
  forget(index: number): void {
    this.set(index, -1);
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
    if (index >= this.next) this.next = index + 1;
  }
}
