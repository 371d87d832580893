/**
 * A fast path of the streaming pickle machine for the dict a snapshot holds a million of: a trace
 * entry, `{action, addr, size, stream, time_us, frames, …}`, whose keys are strings and whose
 * values are scalars, strings or its `frames` list. Protocol 4 writes it as
 *
 * ```
 *  EMPTY_DICT MEMOIZE MARK  key value  key value …  SETITEMS
 *  key    BINGET | LONG_BINGET | SHORT_BINUNICODE [MEMOIZE]
 *  value  the same, or BININT1 | BININT2 | BININT | LONG1 | BINFLOAT | NONE | NEWTRUE | NEWFALSE
 *         | EMPTY_LIST MEMOIZE (an empty list) | a frames list (see `frames-list.ts`)
 * ```
 *
 * {@link readFlatDict} decodes exactly that shape from one buffer into its keys and values,
 * changing nothing, the memo slots the dict would take kept aside in order; the machine then
 * commits them and pushes the dict, as the opcodes one by one would have, but without a pushed
 * value, a dispatch and a check per opcode. Any other shape, a dict of at most
 * {@link SMALL_DICT_PAIRS} pairs (a frame's: see `small-dict.ts`), a cut buffer or a slot
 * that is not there declines (-1), and the ordinary opcodes run on the same bytes.
 */
import { type FramesList, readFramesList } from './frames-list';
import { FORGOTTEN, type Memo } from './memo';
import { decodeLong, decodeUtf8, intAt, intWidth } from './operands';
import { SMALL_DICT_PAIRS } from './small-dict';
import type { FrameHooks } from './values';
import { PDict, PList } from './values';

/** Most key/value pairs the fast path takes. */
export const FLAT_DICT_PAIRS = 64;

/** What a pending memo slot of a {@link FlatDict} holds, besides a string. */
export const EMPTY_LIST = -1;
export const FRAMES_LIST = -2;

/** What {@link readFlatDict} decoded. */
export interface FlatDict {
  /** Keys and values, alternating, in `[0, n)`: an empty or frames list is made at the commit. */
  readonly pairs: unknown[];
  n: number;
  /**
   * What takes the memo slots after the dict's own, in order, `[1, logs)`: a string
   * (`strings[k]`, `kinds[k]` 0), an empty list for the value at `listPair[k]` ({@link EMPTY_LIST}),
   * or the frames list ({@link FRAMES_LIST}), which takes `frames.count` slots.
   */
  readonly strings: (string | null)[];
  readonly kinds: Int32Array;
  readonly listPair: Int32Array;
  logs: number;
  /** Memo slots taken, the dict's own included. */
  count: number;
  /** Characters of the strings memoized. */
  stringBytes: number;
  /** The pair index of the frames list's value, or -1. */
  framesAt: number;
  /** The frames list's scratch. */
  readonly frames: FramesList;
}

/** A reusable {@link FlatDict} over `frames`, the machine's frames-list scratch. */
export function flatDict(frames: FramesList): FlatDict {
  const most = 1 + 2 * FLAT_DICT_PAIRS;
  return {
    pairs: new Array<unknown>(2 * FLAT_DICT_PAIRS).fill(undefined),
    n: 0,
    strings: new Array<string | null>(most).fill(null),
    kinds: new Int32Array(most),
    listPair: new Int32Array(most),
    logs: 0,
    count: 0,
    stringBytes: 0,
    framesAt: -1,
    frames,
  };
}

/** A value that ends a decode: the bytes are not the fast path's shape. */
const DECLINE = Symbol('decline');

/**
 * Decodes the dict at `p` (its `EMPTY_DICT`) into `out`; returns where the opcode after its
 * `SETITEMS` starts, or -1 when the bytes are not that shape (see the module comment). A frames
 * list among its values is read when `hooks` are given.
 */
export function readFlatDict(
  buf: Uint8Array,
  view: DataView,
  p: number,
  end: number,
  memo: Memo,
  hooks: FrameHooks | null,
  out: FlatDict,
): number {
  if (p + 3 > end || buf[p + 1] !== 0x94 || buf[p + 2] !== 0x28) return -1;
  const next = memo.next;
  const pairs = out.pairs;
  const strings = out.strings;
  const kinds = out.kinds;
  out.framesAt = -1;
  // Pending memo slots: the dict's own (0), then strings and lists as they come; `logs` says what
  // takes each, a frames list taking [listFrom, listTo) and one log.
  let count = 1;
  let logs = 1;
  let listFrom = -1;
  let listTo = -1;
  let stringBytes = 0;
  let n = 0;
  let q = p + 3;
  while (q < end) {
    const op = buf[q]!;
    if (op === 0x75) {
      if (n <= 2 * SMALL_DICT_PAIRS || (n & 1) === 1) return -1;
      out.n = n;
      out.logs = logs;
      out.count = count;
      out.stringBytes = stringBytes;
      return q + 1;
    }
    if (n === 2 * FLAT_DICT_PAIRS) return -1;
    let value: unknown = DECLINE;
    if (op === 0x68 || op === 0x6a) {
      const wide = op === 0x6a;
      if (q + (wide ? 5 : 2) > end) return -1;
      const index = wide ? view.getUint32(q + 1, true) : buf[q + 1]!;
      q += wide ? 5 : 2;
      const k = index - next;
      if (k < 0) {
        value = memo.get(index);
        if (value === undefined || value === FORGOTTEN) return -1;
      } else {
        // A slot of this dict: only a string it memoized (not the dict, not a list).
        const log = listTo < 0 || k < listFrom ? k : k >= listTo ? k - listTo + listFrom + 1 : 0;
        if (k === 0 || k >= count || log === 0 || kinds[log] !== 0) return -1;
        value = strings[log];
      }
      // A key the generic SETITEMS would refuse: let it say so.
      if ((n & 1) === 0 && (value instanceof PDict || (value instanceof PList && !value.tuple))) {
        return -1;
      }
    } else if (op === 0x8c) {
      if (q + 2 > end) return -1;
      const length = buf[q + 1]!;
      if (q + 2 + length > end) return -1;
      const text = decodeUtf8(buf, q + 2, length);
      q += 2 + length;
      if (q < end && buf[q] === 0x94) {
        kinds[logs] = 0;
        strings[logs++] = text;
        count++;
        stringBytes += text.length;
        q++;
      }
      value = text;
    } else if ((n & 1) === 1) {
      // Values only.
      const width = intWidth(op);
      if (width > 0) {
        if (q + 1 + width > end) return -1;
        value = intAt(buf, view, q, width);
        q += 1 + width;
      } else if (op === 0x8a) {
        if (q + 2 > end || q + 2 + buf[q + 1]! > end) return -1;
        value = decodeLong(buf, q + 2, buf[q + 1]!);
        q += 2 + buf[q + 1]!;
      } else if (op === 0x47) {
        if (q + 9 > end) return -1;
        value = view.getFloat64(q + 1, false);
        q += 9;
      } else if (op === 0x4e || op === 0x88 || op === 0x89) {
        value = op === 0x4e ? null : op === 0x88;
        q++;
      } else if (op === 0x5d) {
        if (q + 3 > end || buf[q + 1] !== 0x94) return -1;
        if (buf[q + 2] !== 0x28) {
          // An empty list (a list of one item would end in APPEND, which declines).
          kinds[logs] = EMPTY_LIST;
          out.listPair[logs++] = n;
          count++;
          value = null;
          q += 2;
        } else {
          if (hooks === null || out.framesAt >= 0) return -1;
          const after = readFramesList(buf, view, q, end, memo, hooks, out.frames, next + count);
          if (after < 0) return -1;
          out.framesAt = n;
          kinds[logs++] = FRAMES_LIST;
          listFrom = count;
          count += out.frames.count;
          listTo = count;
          value = null;
          q = after;
        }
      }
    }
    if (value === DECLINE) return -1;
    pairs[n++] = value;
  }
  return -1;
}
