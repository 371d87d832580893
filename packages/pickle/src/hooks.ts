/**
 * What a streaming pickle machine is told: the hooks it calls as it builds (which may consume a
 * container as its parent list takes it, and intern frames), and the limits on what it holds and
 * on what the values it consumed expand to.
 */
import type { FrameHooks, PList } from './values';

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
   * A dict of at most three pairs written anew, read by the fast paths (see `fast-paths.ts`), its
   * keys and values alternating in `pairs[0, 2 × size)`: the ref that stands for it (it is then
   * never built), or -1 to have it built as usual.
   */
  smallDict?(pairs: readonly unknown[], size: number): number;
  /** The frames the hooks interned, for lists of them (see `fast-paths.ts`). */
  readonly frames?: FrameHooks;
  /**
   * Strings the hooks compare values with (the keys they look for): the memo keeps an equal
   * string as this very string, which a comparison then finds at once.
   */
  readonly strings?: readonly string[];
  /** What the values the hooks consume are, for errors (`trace entries`). @defaultValue 'values' */
  readonly consumed?: string;
  /**
   * What a value the hooks consumed is, when the pickle refers to it again, for the error (a
   * snapshot refers to each trace entry once). @defaultValue 'a value the reader took already'
   */
  readonly readOnce?: string;
}

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
