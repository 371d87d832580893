/**
 * The frames the hooks found for the frame dicts of a frames list (see `fast-paths.ts`), by what
 * their opcodes say. A frame dict written anew is, in a snapshot with stacks, one of a few
 * thousand: the same memo references to the same key and value strings, the same line. So a dict
 * whose keys and values are all memo references to slots the memo holds, or ints, is known by those
 * slot numbers and ints alone, as long as no slot is stored again (the memo's `version`):
 *
 * ```
 *  EMPTY_DICT MEMOIZE MARK  BINGET 25 BINGET 69  BINGET 27 LONG_BINGET 4380  BINGET 29 BININT2 526  SETITEMS
 *  key: 25 69 27 4380 29 526, ints at 5   ─►  frame 1234
 * ```
 *
 * The fast path reads that key as it decodes the dict, without a memo lookup; a key seen before
 * gives the frame the hooks found for it then. Anything else (a string written in place, a
 * reference to a slot not stored yet) has no key, and the dict goes the usual way.
 */
import type { Memo } from './memo';

/** Most key/value pairs of a frame dict. */
export const FRAME_DICT_PAIRS = 3;
/** Int32s per entry: the key's values, its count and int flags, its hash, and the frame id + 1. */
const KEY = 2 * FRAME_DICT_PAIRS;
const ENTRY = KEY + 4;
/** Most entries: past them, dicts not yet known go the usual way. */
const MOST_ENTRIES = 1 << 16;
/**
 * Times the table may start over (with entries in it): past them, a pickle that stores memo slots
 * again and again goes without the table, rather than have it made anew each time.
 */
const MOST_CLEARS = 64;

/** `hash` with `value`, the next of a key's values (see {@link FrameCache.find}). */
export function mix(hash: number, value: number): number {
  return Math.imul(hash ^ value, 0x85ebca6b) ^ (hash >>> 13);
}

/** Frame dicts' frames, by their key (see the module comment). */
export class FrameCache {
  /** The key being read: values, then count, then which values are ints (bit k). */
  readonly key = new Int32Array(KEY + 2);
  /** The hash of {@link key}. */
  private keyHash = 0;
  private table = new Int32Array(ENTRY << 10);
  /** Entries the table has room for, less one (a power of two less one). */
  private mask = (1 << 10) - 1;
  private entries = 0;
  private version = 0;
  private clears = 0;

  /**
   * The frame id found before for the key whose values are in `key[0, n)`, the ints among them at
   * bits `ints` and `hash` their {@link mix}, or -1 (the memo as it is now). Keeps the key for
   * {@link add}.
   */
  find(memo: Memo, n: number, ints: number, hash: number): number {
    const key = this.key;
    key[KEY] = n;
    key[KEY + 1] = ints;
    const h = Math.imul(hash ^ n ^ (ints << 8), 0x9e3779b1);
    const keyHash = (this.keyHash = (h ^ (h >>> 16)) & 0x7fffffff);
    if (memo.version !== this.version) this.clear(memo.version);
    if (this.clears > MOST_CLEARS) return -1;
    const { table, mask } = this;
    for (let at = keyHash & mask; ; at = (at + 1) & mask) {
      const e = at * ENTRY;
      const id = table[e + ENTRY - 1]!;
      if (id === 0) return -1;
      if (table[e + KEY + 2] === keyHash && this.same(e)) return id - 1;
    }
  }

  /** Keeps frame `id` for {@link key} (read against the memo's current version). */
  add(id: number): void {
    if (this.entries >= MOST_ENTRIES || this.clears > MOST_CLEARS) return;
    if ((this.entries + 1) * 2 > this.mask + 1) this.grow();
    this.put(this.table, this.key, this.keyHash, id);
    this.entries++;
  }

  private same(e: number): boolean {
    const table = this.table;
    const key = this.key;
    if (table[e + KEY] !== key[KEY] || table[e + KEY + 1] !== key[KEY + 1]) return false;
    for (let i = 0; i < key[KEY]!; i++) if (table[e + i] !== key[i]) return false;
    return true;
  }

  private put(table: Int32Array, key: Int32Array, hash: number, id: number): void {
    const mask = table.length / ENTRY - 1;
    let at = hash & mask;
    while (table[at * ENTRY + ENTRY - 1] !== 0) at = (at + 1) & mask;
    const e = at * ENTRY;
    table.set(key.subarray(0, KEY + 2), e);
    table[e + KEY + 2] = hash;
    table[e + ENTRY - 1] = id + 1;
  }

  private grow(): void {
    const old = this.table;
    const table = new Int32Array(old.length * 2);
    for (let e = 0; e < old.length; e += ENTRY) {
      const id = old[e + ENTRY - 1]!;
      if (id !== 0) this.put(table, old.subarray(e, e + KEY + 2), old[e + KEY + 2]!, id - 1);
    }
    this.table = table;
    this.mask = table.length / ENTRY - 1;
  }

  /** Forgets every key: a memo slot was stored again. */
  private clear(version: number): void {
    this.version = version;
    if (this.entries === 0) return;
    this.clears++;
    this.table = new Int32Array(this.clears > MOST_CLEARS ? ENTRY : ENTRY << 10);
    this.mask = this.table.length / ENTRY - 1;
    this.entries = 0;
  }
}
