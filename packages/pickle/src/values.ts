/**
 * The values of the streaming pickle machine ({@link PickleMachine}): its own containers, plain
 * classes, so a key `__proto__` is only a key; the frame ids that stand for the items of a frames
 * list the fast path read; and what a hook returns for a value it consumed.
 *
 * ```
 *  PList   items (or frame ids standing for them), memo slot, sink (what the hooks attached), weight
 *  PDict   keys and values alternating, memo slot, weight
 * ```
 */
/** Int32s per chunk of a {@link FrameIdArena}: a thousand entries' stacks of 60 frames. */
const ARENA_CHUNK = 1 << 16;

/**
 * Where the frames lists the fast path read keep their frame ids: runs in a shared Int32Array
 * chunk, not an array each (half a million arrays of 60 numbers, on a 250 MB snapshot). A list gives
 * its run back once its ids are used (its stack interned, or its items made); when every run is
 * back, which happens at each `APPENDS` of a snapshot's entries, the chunk is written again from
 * its start. Runs still held when the chunk is full keep it alive, and the next runs go to a new one.
 */
export class FrameIdArena {
  /** The chunk runs are written to now. */
  chunk = new Int32Array(ARENA_CHUNK);
  private used = 0;
  private held = 0;

  /** Copies `ids[0, n)` into {@link chunk}, returning where; the caller holds the run. */
  keep(ids: Int32Array, n: number): number {
    if (this.held === 0) this.used = 0;
    if (this.used + n > this.chunk.length) {
      this.chunk = new Int32Array(Math.max(ARENA_CHUNK, n));
      this.used = 0;
    }
    const at = this.used;
    const chunk = this.chunk;
    for (let i = 0; i < n; i++) chunk[at + i] = ids[i]!;
    this.used = at + n;
    this.held++;
    return at;
  }

  /** A run is no longer held. */
  giveBack(): void {
    this.held--;
  }
}

/** What the machine asks of its hooks about frames (see `MachineHooks.frames`). */
export interface FrameHooks {
  /** The frame id that ref `ref` (a memo slot's, see `MachineHooks.ref`) stands for, or -1. */
  frameOf(ref: number): number;
  /** The ref that stands for frame `id`. */
  refOf(id: number): number;
  /**
   * The frame id of a small dict (keys and values alternating in `pairs[0, 2 × size)`) when it is
   * a frame, interned when it is new (as the hooks would intern it when a list takes it), else -1.
   */
  find(pairs: readonly unknown[], size: number): number;
  /** What a list holds for frame `id` (what `MachineHooks.ref` gives for its ref). */
  item(id: number): unknown;
}

/** A list, tuple or set of the machine. */
export class PList {
  /** The items; null while {@link frameIds} stand for them, or while there are none yet. */
  private held: unknown[] | null = null;
  /**
   * The frame ids of a frames list the fast path read (see {@link FrameHooks}), `[frameFrom,
   * frameFrom + frameCount)` of a {@link FrameIdArena}'s chunk, standing for its items until they
   * are asked for; else null.
   */
  frameIds: Int32Array | null = null;
  frameFrom = 0;
  frameCount = 0;
  private arena: FrameIdArena | null = null;
  private hooks: FrameHooks | null = null;
  /** Memo index of this list, or -1. */
  memo = -1;
  /** Values the hooks consumed under this list, memo repeats counted (see `maxConsumed`). */
  weight = 0;
  /** What the hooks attached to the list (the columns of a device trace, say). */
  sink: unknown = null;
  constructor(readonly tuple = false) {}

  /** The items (those of a frames list made when first asked). */
  get items(): unknown[] {
    if (this.held === null && this.frameIds === null) this.held = [];
    if (this.held === null) {
      const hooks = this.hooks!;
      const ids = this.frameIds!;
      const held = new Array<unknown>(this.frameCount);
      for (let i = 0; i < held.length; i++) held[i] = hooks.item(ids[this.frameFrom + i]!);
      this.held = held;
      this.forgetIds();
    }
    return this.held;
  }

  /** Number of items. */
  get length(): number {
    return this.held === null ? this.frameCount : this.held.length;
  }

  /** Frames `ids[0, n)` (of `hooks`) stand for the items, kept in `arena`, until asked for. */
  standFor(ids: Int32Array, n: number, hooks: FrameHooks, arena: FrameIdArena): void {
    this.held = null;
    this.frameFrom = arena.keep(ids, n);
    this.frameIds = arena.chunk;
    this.frameCount = n;
    this.arena = arena;
    this.hooks = hooks;
  }

  /** Drops the items (a list the hooks consumed). */
  drop(): void {
    this.held = null;
    this.forgetIds();
  }

  private forgetIds(): void {
    this.arena?.giveBack();
    this.arena = null;
    this.frameIds = null;
    this.frameCount = 0;
    this.hooks = null;
  }
}

/** A dict of the machine: keys and values in insertion order. */
export class PDict {
  /** Memo index of this dict, or -1. */
  memo = -1;
  /** Values the hooks consumed under this dict, memo repeats counted (see `maxConsumed`). */
  weight = 0;

  /** @param pairs - keys and values, alternating, in insertion order. */
  constructor(readonly pairs: unknown[] = []) {}

  /** Number of keys. */
  get size(): number {
    return this.pairs.length >> 1;
  }

  /** The value of string key `key`, or undefined. */
  get(key: string): unknown {
    const pairs = this.pairs;
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === key) return pairs[i + 1];
    return undefined;
  }
}

/** What {@link MachineHooks.append} returns for a value the list does not keep. */
export const CONSUMED: unique symbol = Symbol('consumed');

/** A short description of a machine value's Python type, for error messages. */
export function machineTypeOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'None';
  if (value instanceof PList) return value.tuple ? 'a tuple' : 'a list';
  if (value instanceof PDict) return 'a dict';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === 'object') return 'an object';
  return `the ${typeof value} ${String(value)}`;
}
