/**
 * The fast paths of the streaming pickle machine: the shapes a snapshot is made of, read in one
 * step from the buffer. Protocol 4 writes them as
 *
 * ```
 *  dict         EMPTY_DICT MEMOIZE MARK  key value  key value …  SETITEMS
 *  frames list  EMPTY_LIST MEMOIZE MARK  item item …  APPENDS
 *  key          BINGET | LONG_BINGET | SHORT_BINUNICODE [MEMOIZE]
 *  value        the same, an int, a float, None, a bool, EMPTY_LIST MEMOIZE, or a frames list
 *  item         a memo reference to a frame the hooks interned, or a frame dict written anew
 * ```
 *
 * A trace entry is a dict of scalars and strings with a frames list; a stack frame is a dict of at
 * most three pairs that the hooks intern, known by its key (see `frame-cache.ts`) once seen. Each
 * read decodes its opcodes as it goes, through {@link readOperand}, and changes nothing: the memo
 * slots it would take wait in {@link Pending}, and the machine commits them, and the container,
 * only when the limits leave room for all of it, as the opcodes one by one would have left them.
 * Any other shape, a cut buffer or a slot that is not there declines (-1), and the ordinary
 * opcodes run on the same bytes, so a fast path never changes a result.
 */
import { FRAME_DICT_PAIRS, FrameCache, mix } from './frame-cache';
import type { MachineHooks } from './hooks';
import { FORGOTTEN, type Memo } from './memo';
import {
  APPENDS,
  DICT,
  INT,
  LIST,
  type Operand,
  operand,
  REF,
  readOperand,
  SETITEMS,
  TEXT,
} from './operands';
import { EMPTY, FRAME, FRAMES, Pending, SELF } from './pending';
import { type FrameHooks, FrameIdArena, PDict, PList } from './values';

/** Most key/value pairs of a dict the fast path takes. */
export const FLAT_DICT_PAIRS = 64;
/** Most items of a frames list the fast path takes: what Python writes between MARK and APPENDS. */
export const FRAMES_LIST_ITEMS = 1000;

/** What the fast paths read, for the machine to commit (one object per machine, reused). */
export class FastPaths {
  readonly pending = new Pending(1 + 2 * FLAT_DICT_PAIRS + FRAMES_LIST_ITEMS * (1 + 3));
  /** The dict read: keys and values alternating in `[0, n)`; a list value is made at the commit. */
  readonly pairs = new Array<unknown>(2 * FLAT_DICT_PAIRS).fill(undefined);
  n = 0;
  /** Whether the dict read is a frame dict's shape (see {@link readDict}). */
  frameShape = false;
  /** The frames list read: the frame id of each item, in `[0, frames)`. */
  readonly ids = new Int32Array(FRAMES_LIST_ITEMS);
  frames = 0;
  /**
   * Keys and values of the frame dicts written anew in that list: read one opcode at a time, they
   * are all held until its `APPENDS`.
   */
  frameValues = 0;
  /** Where the lists made from {@link ids} keep them. */
  readonly arena = new FrameIdArena();
  private readonly op: Operand = operand();
  private readonly cache = new FrameCache();
  /** A frame dict of a list, decoded: keys and values alternating. */
  private readonly framePairs = new Array<unknown>(2 * FRAME_DICT_PAIRS).fill(undefined);

  constructor(
    private readonly hooks: MachineHooks,
    private readonly memo: Memo,
  ) {}

  /**
   * Reads the dict at `p` (its `EMPTY_DICT`); returns where the opcode after its `SETITEMS`
   * starts, or -1 when the bytes are not a dict of the fast path's shape. A frames list among its
   * values is read when the hooks intern frames.
   */
  readDict(buf: Uint8Array, view: DataView, p: number, end: number): number {
    const { pending, pairs, memo, op } = this;
    let q = readOperand(buf, view, p, end, op);
    const start = op.kind;
    if (q < 0 || start !== DICT) return -1;
    pending.reset(memo.next);
    pending.add(SELF);
    this.frames = 0;
    this.frameValues = 0;
    let frameShape = true;
    for (let n = 0; ; n++) {
      const at = q;
      q = readOperand(buf, view, q, end, op);
      if (q < 0) return -1;
      const kind = op.kind;
      if (kind === SETITEMS) {
        if (n === 0 || (n & 1) === 1) return -1;
        this.n = n;
        this.frameShape = frameShape && n <= 2 * FRAME_DICT_PAIRS;
        return q;
      }
      if (n === 2 * FLAT_DICT_PAIRS) return -1;
      const isValue = (n & 1) === 1;
      let value: unknown = null;
      if (kind === REF) {
        const slot = op.index;
        value = slot < pending.base ? memo.get(slot) : pending.stringAt(slot);
        if (value === undefined || value === FORGOTTEN) return -1;
        // A key the ordinary SETITEMS would refuse: let it say so.
        if (!isValue && (value instanceof PDict || (value instanceof PList && !value.tuple))) {
          return -1;
        }
        if (typeof value === 'object') frameShape = false;
      } else if (kind === TEXT) {
        value = op.value;
        if (op.memoized && !pending.addString(value as string)) return -1;
        if (!op.memoized || !isValue) frameShape = false;
      } else if (kind === INT) {
        value = op.index;
      } else if (!isValue || kind === DICT || kind === APPENDS) {
        return -1;
      } else if (kind !== LIST) {
        frameShape = false;
        value = op.value;
      } else if (!op.memoized) {
        // An empty list (a list of one item would end in APPEND, which declines).
        frameShape = false;
        if (!pending.add(EMPTY, n)) return -1;
      } else {
        // A frames list, once.
        const frames = this.hooks.frames;
        frameShape = false;
        if (frames === undefined || this.frames > 0 || !pending.add(FRAMES, n)) return -1;
        q = this.readFrames(buf, view, at, end, frames);
        if (q < 0) return -1;
      }
      pairs[n] = value;
    }
  }

  /**
   * Reads the frames list at `p` (its `EMPTY_LIST`); returns where the opcode after its `APPENDS`
   * starts, or -1 when the bytes are not a list of frames the hooks know.
   */
  readList(buf: Uint8Array, view: DataView, p: number, end: number, hooks: FrameHooks): number {
    this.pending.reset(this.memo.next);
    this.pending.add(SELF);
    this.frameValues = 0;
    return this.readFrames(buf, view, p, end, hooks);
  }

  /** {@link readList}, its slots pending after those of the read so far. */
  private readFrames(
    buf: Uint8Array,
    view: DataView,
    p: number,
    end: number,
    hooks: FrameHooks,
  ): number {
    const { pending, ids, memo, op, cache } = this;
    let q = readOperand(buf, view, p, end, op);
    const start = op.kind;
    if (q < 0 || start !== LIST || !op.memoized) return -1;
    let frames = 0;
    for (;;) {
      const at = q;
      q = readOperand(buf, view, q, end, op);
      if (q < 0) return -1;
      let id = -1;
      if (op.kind === REF) {
        // A frame interned, or a frame dict of this list.
        const index = op.index;
        if (index >= pending.base) id = pending.frameAt(index);
        else {
          const slot = memo.raw(index);
          if (slot > 0 && (slot & 1) === 1) id = hooks.frameOf(slot >>> 1);
        }
      } else if (op.kind === DICT) {
        // A frame dict: known by its key (memo references and ints), or decoded and looked up.
        const key = cache.key;
        let n = 0;
        let ints = 0;
        let hash = 0;
        let kind: number = DICT;
        for (; n <= 2 * FRAME_DICT_PAIRS; n++) {
          q = readOperand(buf, view, q, end, op);
          kind = op.kind;
          if (q < 0) return -1;
          if (kind === SETITEMS) break;
          if (kind === INT && (n & 1) === 1) ints |= 1 << n;
          else if (kind !== REF || op.index < 0 || op.index >= pending.base) ints = -1;
          if (n < 2 * FRAME_DICT_PAIRS) key[n] = op.index;
          hash = mix(hash, op.index);
        }
        if (kind !== SETITEMS || n === 0 || (n & 1) === 1) return -1;
        if (ints >= 0) id = cache.find(memo, n, ints, hash);
        if (id >= 0) {
          if (!pending.add(FRAME, id)) return -1;
        } else {
          id = this.newFrame(buf, view, at, end, hooks, ints >= 0);
        }
        this.frameValues += n;
      } else if (op.kind === APPENDS && frames > 0) {
        this.frames = frames;
        return q;
      }
      if (id < 0 || frames === FRAMES_LIST_ITEMS) return -1;
      ids[frames++] = id;
    }
  }

  /**
   * The frame of the frame dict at `p`, decoded and found (or interned) by the hooks, and kept by
   * its key when `keyed`; its slot and those of its strings pending. -1 when it is no frame.
   */
  private newFrame(
    buf: Uint8Array,
    view: DataView,
    p: number,
    end: number,
    hooks: FrameHooks,
    keyed: boolean,
  ): number {
    const { pending, cache, memo, framePairs: pairs, op } = this;
    // Its own slot comes first, its strings (bit k: value k is one) after it.
    let strings = 0;
    let q = readOperand(buf, view, p, end, op);
    let n = 0;
    for (; q >= 0; n++) {
      q = readOperand(buf, view, q, end, op);
      if (q < 0) return -1;
      if (op.kind === SETITEMS) break;
      let value: unknown;
      if (op.kind === REF) {
        const slot = op.index;
        value = slot < pending.base ? memo.get(slot) : pending.stringAt(slot);
        if (value === undefined || value === FORGOTTEN || typeof value === 'object') return -1;
      } else if (op.kind === INT) {
        value = op.index;
      } else if (op.kind === TEXT && op.memoized && (n & 1) === 1) {
        strings |= 1 << n;
        value = op.value;
      } else {
        return -1;
      }
      pairs[n] = value;
    }
    const id = hooks.find(pairs, n >> 1);
    if (id < 0 || !pending.add(FRAME, id)) return -1;
    if (keyed) cache.add(id);
    for (let i = 1; i < n; i += 2) {
      if ((strings & (1 << i)) !== 0 && !pending.addString(pairs[i] as string)) return -1;
    }
    return id;
  }
}
