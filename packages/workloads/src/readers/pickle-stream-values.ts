/**
 * What the streaming pickle machine ({@link PickleMachine}) builds and how it is bounded: its own
 * containers, the hooks that may consume them, the limits, the decoding of operands, and the
 * conversion of what it kept into plain values.
 */
import { TraceFormatError } from '../errors';
import { dictKey, type UnpickledValue } from './pickle-values';

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

/** What the machine calls as it builds. */
export interface MachineHooks {
  /**
   * A dict is appended to `list`, or any value to a list whose `sink` the hooks set: returns what
   * the list keeps (`value`, or what stands for it), or {@link CONSUMED} when the list keeps
   * nothing. A hook that consumes or replaces a container tells the machine with
   * {@link PickleMachine.release} and {@link PickleMachine.forget}. Other values are kept as they
   * are, without a call.
   */
  append(list: PList, value: unknown): unknown;
  /** What ref `id` stands for, when the hooks put refs in the memo (see `replaceRef`). */
  ref?(id: number): unknown;
  /**
   * A small dict written anew (see `pickle-small-dict.ts`), its keys and values alternating in
   * `pairs[0, 2 × size)`: the ref that stands for it (it is then never built), or -1 to have it
   * built as usual.
   */
  smallDict?(pairs: readonly unknown[], size: number, slots: Int32Array): number;
  /** The frames the hooks interned, for lists of them (see `pickle-frames-list.ts`). */
  readonly frames?: FrameHooks;
  /**
   * Strings the hooks compare values with (the keys they look for): the memo keeps an equal
   * string as this very string, which a comparison then finds at once.
   */
  readonly strings?: readonly string[];
  /** What the values the hooks consume are, for errors (`trace entries`). @defaultValue 'values' */
  readonly consumed?: string;
}

/** What the machine asks of its hooks about frames (see {@link MachineHooks.frames}). */
export interface FrameHooks {
  /** The frame id that ref `ref` (a memo slot's, see `MachineHooks.ref`) stands for, or -1. */
  frameOf(ref: number): number;
  /** The ref that stands for frame `id`. */
  refOf(id: number): number;
  /**
   * The frame id of a small dict (keys and values alternating in `pairs[0, 2 × size)`) when it is
   * a frame the hooks interned already, else -1. Interns nothing.
   */
  find(pairs: readonly unknown[], size: number, slots: Int32Array): number;
  /** What a list holds for frame `id` (what `MachineHooks.ref` gives for its ref). */
  item(id: number): unknown;
}

/** What {@link MachineHooks.append} returns for a value the list does not keep. */
export const CONSUMED: unique symbol = Symbol('consumed');

/** Bounds on what one streamed pickle may hold at once (not on the input's length). */
export interface MachineLimits {
  /** Values held in kept containers and on the stack. */
  readonly maxItems: number;
  /** Memo slots. */
  readonly maxMemo: number;
  /** Bytes of one string or bytes value. */
  readonly maxStringBytes: number;
  /** Bytes of strings held by the memo, summed. */
  readonly maxMemoStringBytes: number;
  /** Bytes of one integer (`LONG1`, `LONG4`). */
  readonly maxIntegerBytes: number;
  /**
   * Values the hooks consumed (a snapshot's trace entries) under any one container, counted again
   * each time a container that holds them is put in another: a list repeated through the memo
   * stands for all its values at each place, and whoever walks the result pays for each.
   */
  readonly maxConsumed: number;
}

/** Default {@link MachineLimits}: a few GB of memory at most, whatever the input's length. */
export const DEFAULT_MACHINE_LIMITS: MachineLimits = Object.freeze({
  maxItems: 24_000_000,
  maxMemo: 400_000_000,
  maxStringBytes: 64 * 1024 * 1024,
  maxMemoStringBytes: 1024 * 1024 * 1024,
  maxIntegerBytes: 1024,
  maxConsumed: 24_000_000,
});

export const utf8 = new TextDecoder('utf-8', { fatal: false });
export const latin1 = new TextDecoder('latin1');

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

/** A string or bytes value of opcode `op` from `n` bytes at `at`. */
export function text(op: number, buf: Uint8Array, at: number, n: number): string | Uint8Array {
  if (op === 0x8c || op === 0x58 || op === 0x8d) return decodeUtf8(buf, at, n);
  if (op === 0x54 || op === 0x55) return latin1.decode(buf.subarray(at, at + n));
  return buf.slice(at, at + n);
}

/** Longest string {@link decodeUtf8} keeps for reuse, in bytes. */
const SHORT_TEXT = 32;
/** Short strings kept for reuse, by a hash of their bytes (one per slot, the latest). */
const SHORT_TEXT_SLOTS = 1024;
const shortTextLength = new Int16Array(SHORT_TEXT_SLOTS).fill(-1);
const shortTextBytes = new Uint8Array(SHORT_TEXT_SLOTS * SHORT_TEXT);
const shortTexts = new Array<string | undefined>(SHORT_TEXT_SLOTS).fill(undefined);

/**
 * UTF-8 text of `n` bytes at `at`: a short string seen lately is the very string again (a snapshot
 * writes `'N/A'` anew in every entry), other short ASCII without the decoder's call overhead.
 */
export function decodeUtf8(buf: Uint8Array, at: number, n: number): string {
  if (n > SHORT_TEXT) return utf8.decode(buf.subarray(at, at + n));
  // A short string seen lately comes back as the very string: no decoding, no garbage.
  let hash = n;
  for (let i = at; i < at + n; i++) hash = Math.imul(hash ^ buf[i]!, 0x01000193);
  const slot = (hash ^ (hash >>> 15)) & (SHORT_TEXT_SLOTS - 1);
  const from = slot * SHORT_TEXT;
  if (shortTextLength[slot] === n) {
    let same = true;
    for (let i = 0; i < n; i++) {
      if (shortTextBytes[from + i] !== buf[at + i]) {
        same = false;
        break;
      }
    }
    if (same) return shortTexts[slot]!;
  }
  let text = '';
  for (let i = at; i < at + n; i++) {
    const b = buf[i]!;
    if (b >= 0x80) {
      text = utf8.decode(buf.subarray(at, at + n));
      break;
    }
    text += String.fromCharCode(b);
  }
  shortTextLength[slot] = n;
  for (let i = 0; i < n; i++) shortTextBytes[from + i] = buf[at + i]!;
  shortTexts[slot] = text;
  return text;
}

/** Bytes of the operand of `op` when it is `BININT1`, `BININT2` or `BININT`; else 0. */
export function intWidth(op: number): number {
  return op === 0x4b ? 1 : op === 0x4d ? 2 : op === 0x4a ? 4 : 0;
}

/** The operand of the int opcode at `q`, of `width` bytes (see {@link intWidth}). */
export function intAt(buf: Uint8Array, view: DataView, q: number, width: number): number {
  return width === 1
    ? buf[q + 1]!
    : width === 2
      ? buf[q + 1]! | (buf[q + 2]! << 8)
      : view.getInt32(q + 1, true);
}

/** Two's complement little-endian integer of `n` bytes at `at` (`LONG1`/`LONG4`). */
export function decodeLong(buf: Uint8Array, at: number, n: number): number | bigint {
  if (n === 0) return 0;
  const top = buf[at + n - 1]!;
  // Up to 52 bits, exact in a double: addresses (6 bytes) and µs times (7 bytes) of a snapshot.
  if (n <= 6 || (n === 7 && top < 0x10)) {
    let value = 0;
    for (let i = at + n - 1; i >= at; i--) value = value * 256 + buf[i]!;
    return top >= 0x80 ? value - 2 ** (8 * n) : value;
  }
  let value = 0n;
  for (let i = at + n - 1; i >= at; i--) value = (value << 8n) | BigInt(buf[i]!);
  if (top >= 0x80) value -= 1n << BigInt(8 * n);
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

/** Options of {@link plainValue}. */
export interface PlainOptions {
  /** Label and byte offset of errors. */
  readonly name: string;
  readonly at: number;
  /** Most values visited, a value the memo repeats counted each time. */
  readonly maxVisits: number;
  /** What a value that is no pickle value stands for (an interned frame, say), else undefined. */
  readonly frame?: (value: unknown) => unknown;
}

/** Deepest nesting {@link plainValue} converts. */
export const MAX_PLAIN_DEPTH = 1000;

/**
 * A machine value as plain values, as {@link unpickle} makes them: dicts as objects without a
 * prototype (keys as `dictKey` writes them), lists, tuples and sets as arrays. Each container is
 * made once, so a value the memo repeats stays one value; its visits are counted all the same,
 * since a reader walking the result pays for each, and nesting is bounded.
 *
 * @throws TraceFormatError past `maxVisits` values or {@link MAX_PLAIN_DEPTH} levels.
 */
export function plainValue(value: unknown, options: PlainOptions): unknown {
  let budget = options.maxVisits;
  const made = new Map<unknown, unknown>();
  /** Values visited in making each container: what a walk of it costs, memo repeats counted. */
  const expanded = new Map<unknown, number>();
  const fail = (expected: string, found = 'more'): never => {
    throw new TraceFormatError(options.name, options.at, expected, found, 'byte');
  };
  const spend = (n: number) => {
    budget -= n;
    if (budget < 0) {
      fail(
        `at most ${options.maxVisits.toLocaleString('en-US')} values after memo expansion ` +
          '(a value repeated through the memo counts each time)',
      );
    }
  };
  const convert = (v: unknown, depth: number): unknown => {
    if (!(v instanceof PList) && !(v instanceof PDict)) {
      spend(1);
      return options.frame?.(v) ?? v;
    }
    if (v instanceof PList && v.sink !== null) {
      // A list the hooks took over (a stack's frames, emptied once interned).
      const stands = options.frame?.(v);
      if (stands !== undefined) {
        spend(1);
        return stands;
      }
    }
    const done = made.get(v);
    if (done !== undefined) {
      spend(expanded.get(v) ?? 1);
      return done;
    }
    if (depth > MAX_PLAIN_DEPTH) {
      fail(`at most ${MAX_PLAIN_DEPTH.toLocaleString('en-US')} levels of nesting`);
    }
    const before = budget;
    spend(1);
    let out: unknown[] | Record<string, unknown>;
    if (v instanceof PList) {
      const list: unknown[] = [];
      made.set(v, list);
      for (const item of v.items) list.push(convert(item, depth + 1));
      out = list;
    } else {
      const dict = Object.create(null) as Record<string, unknown>;
      made.set(v, dict);
      for (let i = 0; i < v.pairs.length; i += 2) {
        const key = dictKey(convert(v.pairs[i], depth + 1) as UnpickledValue);
        if (key === null) {
          fail(
            'a hashable dict key (str, int, float, bool, None or a short tuple of them)',
            'a tuple holding a list or dict',
          );
        }
        dict[key!] = convert(v.pairs[i + 1], depth + 1);
      }
      out = dict;
    }
    expanded.set(v, before - budget);
    return out;
  };
  return convert(value, 0);
}
