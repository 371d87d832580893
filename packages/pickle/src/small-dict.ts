/**
 * A fast path of the streaming pickle machine for the small dict a snapshot holds millions of: a
 * stack frame written anew (`{name, filename, line}`, not one the memo shares). Protocol 4 writes
 * it as
 *
 * ```
 *  EMPTY_DICT MEMOIZE MARK  key value  key value  key value  SETITEMS
 * ```
 *
 * each key a memo reference, each value a memo reference, a short string (then MEMOIZE) or a small
 * int. {@link readSmallDict} decodes exactly that shape from one buffer, changing nothing; the
 * machine then lets its hooks intern the dict, and only if they do, commits the memo slots and
 * pushes what stands for it. Any other shape, a cut buffer or a slot that is not there declines
 * (-1), and the ordinary opcodes run on the same bytes, so the fast path never changes a result.
 */
import type { Memo } from './memo';
import { FORGOTTEN } from './memo';
import { decodeUtf8, intAt, intWidth } from './operands';

/** Most key/value pairs the fast path takes. */
export const SMALL_DICT_PAIRS = 3;

/** What {@link readSmallDict} decoded. */
export interface SmallDict {
  /** Keys and values, alternating. */
  readonly pairs: unknown[];
  /** Pairs decoded. */
  size: number;
  /** The memo slot of each value, by pair: read from or stored at; -1 for an int. */
  readonly slots: Int32Array;
  /** Strings the dict's values memoize, in order (after the dict's own slot): `[0, count)`. */
  readonly strings: string[];
  count: number;
}

/** A reusable {@link SmallDict}. */
export function smallDict(): SmallDict {
  return {
    pairs: new Array<unknown>(2 * SMALL_DICT_PAIRS).fill(undefined),
    size: 0,
    slots: new Int32Array(SMALL_DICT_PAIRS),
    strings: new Array<string>(SMALL_DICT_PAIRS).fill(''),
    count: 0,
  };
}

/**
 * Memo slots a caller decoded but has not stored yet: slot `base + k`, for `k` below `count`,
 * holds `strings[k]` where that is a string, nothing a small dict may take otherwise.
 */
export interface PendingSlots {
  base: number;
  readonly strings: (string | null)[];
  count: number;
}

/**
 * Decodes the dict at `p` (its `EMPTY_DICT`) into `out`; returns where the opcode after its
 * `SETITEMS` starts, or -1 when the bytes are not that shape (see the module comment). Memo
 * references at or above `pending.base` read `pending`.
 */
export function readSmallDict(
  buf: Uint8Array,
  view: DataView,
  p: number,
  end: number,
  memo: Memo,
  out: SmallDict,
  pending: PendingSlots | null = null,
): number {
  if (p + 3 > end || buf[p + 1] !== 0x94 || buf[p + 2] !== 0x28) return -1;
  const top = pending === null ? memo.next : pending.base;
  // The dict's own memo slot: its strings take the slots after it.
  const at = pending === null ? top : top + pending.count;
  let q = p + 3;
  let n = 0;
  out.count = 0;
  while (q < end) {
    const op = buf[q]!;
    if (op === 0x75) {
      if ((n & 1) !== 0 || n === 0) return -1;
      out.size = n >> 1;
      return q + 1;
    }
    if (n === 2 * SMALL_DICT_PAIRS) return -1;
    let value: unknown;
    let slot = -1;
    if (op === 0x68 || op === 0x6a) {
      const wide = op === 0x6a;
      if (q + (wide ? 5 : 2) > end) return -1;
      slot = wide ? view.getUint32(q + 1, true) : buf[q + 1]!;
      if (slot < top) value = memo.get(slot);
      else if (pending !== null && slot - top < pending.count) value = pending.strings[slot - top];
      if (value === undefined || value === FORGOTTEN || typeof value === 'object') return -1;
      q += wide ? 5 : 2;
    } else if (intWidth(op) > 0) {
      const width = intWidth(op);
      if (q + 1 + width > end) return -1;
      value = intAt(buf, view, q, width);
      q += 1 + width;
    } else if (op === 0x8c && (n & 1) === 1) {
      // A short string value, memoized after it.
      if (q + 2 > end) return -1;
      const length = buf[q + 1]!;
      if (q + 2 + length + 1 > end || buf[q + 2 + length] !== 0x94) return -1;
      const text = decodeUtf8(buf, q + 2, length);
      slot = at + 1 + out.count;
      out.strings[out.count++] = text;
      value = text;
      q += 3 + length;
    } else {
      return -1;
    }
    if ((n & 1) === 1) out.slots[n >> 1] = slot;
    out.pairs[n++] = value;
  }
  return -1;
}
