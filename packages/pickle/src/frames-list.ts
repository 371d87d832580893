/**
 * A fast path of the streaming pickle machine for the list a snapshot holds hundreds of thousands
 * of: an entry's `frames`, a stack of frame dicts. Protocol 4 writes it as
 *
 * ```
 *  EMPTY_LIST MEMOIZE MARK  item item …  APPENDS
 * ```
 *
 * each item a memo reference to a frame the hooks interned (a frame dict written before, its slot
 * holding the hooks' ref), or a frame dict written anew (see `small-dict.ts`) that the hooks
 * know already. {@link readFramesList} decodes exactly that shape from one buffer into frame ids,
 * changing nothing, the memo slots the list would take kept aside; the machine then commits them,
 * builds the list and pushes it, as the opcodes one by one would have. Any other shape, a frame not
 * interned yet, a cut buffer or a slot that is not there declines (-1), and the ordinary opcodes
 * run on the same bytes, so the fast path never changes a result.
 */
import { DictCache } from './dict-cache';
import type { Memo } from './memo';
import {
  type PendingSlots,
  readSmallDict,
  SMALL_DICT_PAIRS,
  type SmallDict,
  smallDict,
} from './small-dict';
import type { FrameHooks } from './values';
import { FrameIdArena } from './values';

/** Most items the fast path takes: what Python writes between one MARK and its APPENDS. */
export const FRAMES_LIST_ITEMS = 1000;

/** What {@link readFramesList} decoded. */
export interface FramesList extends PendingSlots {
  /** Frame id of each item, in `[0, n)`. */
  readonly ids: Int32Array;
  n: number;
  /**
   * The memo slots after the list's own, `base + 1 + k` for `k` in `[0, count - 1)`: a frame
   * dict's frame id, or -1 for the string `strings[1 + k]`.
   */
  readonly slots: Int32Array;
  /** Characters of the strings memoized. */
  stringBytes: number;
  readonly dict: SmallDict;
  /** The frames of dicts seen before. */
  readonly cache: DictCache;
  /** Where the lists built from {@link ids} keep them. */
  readonly arena: FrameIdArena;
}

/** A reusable {@link FramesList}. */
export function framesList(): FramesList {
  return {
    ids: new Int32Array(FRAMES_LIST_ITEMS),
    n: 0,
    slots: new Int32Array(FRAMES_LIST_ITEMS * (1 + SMALL_DICT_PAIRS)),
    stringBytes: 0,
    base: 0,
    strings: new Array<string | null>(1 + FRAMES_LIST_ITEMS * (1 + SMALL_DICT_PAIRS)).fill(null),
    count: 0,
    dict: smallDict(),
    cache: new DictCache(),
    arena: new FrameIdArena(),
  };
}

/**
 * Decodes the list at `p` (its `EMPTY_LIST`) into `out`, its MEMOIZE storing at `base` (the
 * memo's next slot, or past those of a dict around it that are not stored yet, which it may not
 * refer to); returns where the opcode after its `APPENDS` starts, or -1 when the bytes are not
 * that shape (see the module comment).
 */
export function readFramesList(
  buf: Uint8Array,
  view: DataView,
  p: number,
  end: number,
  memo: Memo,
  hooks: FrameHooks,
  out: FramesList,
  base = memo.next,
): number {
  if (p + 3 > end || buf[p + 1] !== 0x94 || buf[p + 2] !== 0x28) return -1;
  const ids = out.ids;
  const slots = out.slots;
  const strings = out.strings;
  const dict = out.dict;
  const cache = out.cache;
  out.base = base;
  strings[0] = null;
  // Slots taken: the list's own, then each new dict's and its strings'.
  let count = 1;
  let n = 0;
  let stringBytes = 0;
  let q = p + 3;
  while (q < end) {
    const op = buf[q]!;
    let id: number;
    if (op === 0x68 || op === 0x6a) {
      const wide = op === 0x6a;
      if (q + (wide ? 5 : 2) > end) return -1;
      const index = wide ? view.getUint32(q + 1, true) : buf[q + 1]!;
      q += wide ? 5 : 2;
      if (index < base) {
        const slot = memo.raw(index);
        id = slot > 0 && (slot & 1) === 1 ? hooks.frameOf(slot >>> 1) : -1;
      } else {
        id = index > base && index < base + count ? slots[index - base - 1]! : -1;
      }
    } else if (op === 0x7d) {
      // A dict seen before is known by its key; else it is decoded, and its frame looked up.
      const keyed = cache.keyOf(buf, view, q, end, memo.next);
      id = keyed >= 0 ? cache.find(memo) : -1;
      if (id >= 0) {
        slots[count - 1] = id;
        strings[count++] = null;
        q = keyed;
        if (n === FRAMES_LIST_ITEMS) return -1;
        ids[n++] = id;
        continue;
      }
      out.count = count;
      const next = readSmallDict(buf, view, q, end, memo, dict, out);
      if (next < 0) return -1;
      id = hooks.find(dict.pairs, dict.size, dict.slots);
      if (id < 0) return -1;
      if (keyed >= 0) cache.add(id);
      slots[count - 1] = id;
      strings[count++] = null;
      for (let i = 0; i < dict.count; i++) {
        const text = dict.strings[i]!;
        slots[count - 1] = -1;
        strings[count++] = text;
        stringBytes += text.length;
      }
      q = next;
    } else if (op === 0x65 && n > 0) {
      out.n = n;
      out.count = count;
      out.stringBytes = stringBytes;
      return q + 1;
    } else {
      return -1;
    }
    if (id < 0 || n === FRAMES_LIST_ITEMS) return -1;
    ids[n++] = id;
  }
  return -1;
}
