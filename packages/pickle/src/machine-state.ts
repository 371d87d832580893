/**
 * What the streaming pickle machine holds and how it is bounded: the stack of values, the MARK
 * positions, the chunked memo, and the accounting that keeps them within {@link MachineLimits},
 * what the consumed values expand to included. The opcode loop and the chunks are
 * {@link PickleMachine}'s.
 */
import type { FastPaths } from './fast-paths';
import { FRAME_DICT_PAIRS } from './frame-cache';
import { DEFAULT_MACHINE_LIMITS, type MachineHooks, type MachineLimits } from './hooks';
import { lineValue, memoIndex, takesLine } from './line-operands';
import { FORGOTTEN, Memo } from './memo';
import { Op, refusal } from './opcodes';
import { latin1 } from './operands';
import { EMPTY, FRAME, SELF, STRING } from './pending';
import { type PickleErrorFactory, pickleErrors } from './pickle-error';
import { CONSUMED, machineTypeOf, PDict, PList } from './values';

/**
 * Values a frames list holds at once beside its items, read one opcode at a time: itself, and a
 * frame dict being built with its pairs.
 */
const FRAME_HELD = 2 + 2 * FRAME_DICT_PAIRS;

/** Options of a {@link PickleMachine}. */
export interface MachineOptions {
  /** The input's name, for errors. @defaultValue 'pickle' */
  readonly name?: string;
  /** Bounds on what the pickle may hold. @defaultValue {@link DEFAULT_MACHINE_LIMITS} */
  readonly limits?: MachineLimits;
  /** Makes the errors. @defaultValue {@link PickleError}s */
  readonly error?: PickleErrorFactory;
}

/** Thrown inside {@link PickleMachine.run} when the opcode at `opStart` needs `need` bytes. */
export class Incomplete {
  need = 0;
}
export const INCOMPLETE = new Incomplete();

/** Stack, MARKs and memo of one streamed pickle, within its limits. */
export class PickleState {
  protected readonly stack: unknown[] = [];
  protected readonly marks: number[] = [];
  protected readonly memo: Memo;
  protected memoStringBytes = 0;
  protected items = 0;
  protected opAt = 0;

  readonly limits: MachineLimits;
  /** Makes the errors (see {@link MachineOptions.error}). */
  readonly error: PickleErrorFactory;

  constructor(
    protected readonly hooks: MachineHooks,
    options: MachineOptions = {},
  ) {
    this.limits = options.limits ?? DEFAULT_MACHINE_LIMITS;
    this.error = options.error ?? pickleErrors(options.name ?? 'pickle');
    this.memo = new Memo((id) => hooks.ref?.(id), hooks.strings);
  }

  /** Throws the error of the current opcode. */
  fail(expected: string, found: string): never {
    throw this.error(this.opAt, expected, found);
  }

  protected limit(what: string, most: number): never {
    return this.fail(
      `at most ${most.toLocaleString('en-US')} ${what} (the pickle reader's limit)`,
      'more',
    );
  }

  /** `items` values held by a container the hooks consumed are no longer held. */
  release(items: number): void {
    this.items -= items;
  }

  /** Clears memo slot `index` (a value the hooks consumed): getting it again is an error. */
  forget(index: number): void {
    if (index >= 0) this.memo.forget(index);
  }

  /**
   * Puts the hooks' ref `id` in memo slot `index` in place of what is there (a value the hooks
   * replaced by what {@link MachineHooks.ref} gives for `id`).
   */
  replaceRef(index: number, id: number): void {
    if (index >= 0) this.memo.putRef(index, id);
  }

  /** Fails with {@link INCOMPLETE} unless `n` bytes follow `p`'s opcode start. */
  protected need(p: number, n: number, end: number, opStart: number): void {
    if (p + n > end) {
      INCOMPLETE.need = p + n - opStart;
      throw INCOMPLETE;
    }
  }
  /** The protocol 0 opcodes, whose operand is a line of text. */
  protected lineOp(op: number, buf: Uint8Array, q: number, end: number, p: number): number {
    if (!takesLine(op)) return this.fail(...refusal(op));
    const nl = buf.indexOf(0x0a, q);
    if (nl < 0 || nl >= end) {
      if (end - q > 4096) this.fail('a newline-terminated operand', 'a line of over 4096 bytes');
      this.need(end, 1, end, p);
    }
    const line = latin1.decode(buf.subarray(q, nl));
    const fail = (expected: string, found: string) => this.fail(expected, found);
    if (op === Op.GET) this.pushValue(this.memoGet(memoIndex(line, fail)));
    else if (op === Op.PUT) this.memoPut(memoIndex(line, fail), this.top());
    else this.pushValue(lineValue(op, line, this.limits.maxIntegerBytes * 3, fail));
    return nl + 1;
  }

  protected checkLength(n: number): void {
    if (n > this.limits.maxStringBytes) {
      this.limit('bytes in one string or bytes value', this.limits.maxStringBytes);
    }
  }

  protected pushValue(value: unknown): void {
    if (this.stack.length >= this.limits.maxItems) {
      this.limit('values on the stack', this.limits.maxItems);
    }
    this.stack.push(value);
  }

  protected bottom(): number {
    const marks = this.marks;
    return marks.length > 0 ? marks[marks.length - 1]! : 0;
  }

  protected pop(): unknown {
    const stack = this.stack;
    if (stack.length <= this.bottom()) {
      this.fail('a value on the stack', stack.length > 0 ? 'a MARK' : 'an empty stack');
    }
    return stack.pop();
  }

  protected popN(n: number): unknown[] {
    const stack = this.stack;
    if (stack.length - n < this.bottom()) {
      this.fail(`${n} values on the stack`, stack.length > 0 ? 'a MARK' : 'an empty stack');
    }
    return stack.splice(stack.length - n);
  }

  protected top(): unknown {
    const stack = this.stack;
    if (stack.length <= this.bottom()) {
      this.fail('a value on the stack', stack.length > 0 ? 'a MARK' : 'none');
    }
    return stack[stack.length - 1];
  }

  protected popMark(): unknown[] {
    const at = this.marks.pop();
    if (at === undefined) this.fail('a MARK before this opcode', 'no MARK on the stack');
    return this.stack.splice(at!);
  }

  protected listUnder(what: string): PList {
    const value = this.top();
    if (!(value instanceof PList) || value.tuple) {
      this.fail(`a list under ${what}`, machineTypeOf(value));
    }
    return value as PList;
  }

  protected dictUnder(what: string): PDict {
    const value = this.top();
    if (!(value instanceof PDict)) this.fail(`a dict under ${what}`, machineTypeOf(value));
    return value as PDict;
  }

  /** Counts one more value held in a kept container. */
  protected keep(list: PList, value: unknown): void {
    this.hold(1);
    this.weigh(list, value);
    list.items.push(value);
  }

  /**
   * `value` goes into `into`: the values the hooks consumed under it count there again, within
   * {@link MachineLimits.maxConsumed}, so a container repeated through the memo is refused at the
   * opcode that passes the limit, before anyone walks it.
   */
  protected weigh(into: PList | PDict, value: unknown): void {
    if ((value instanceof PList || value instanceof PDict) && value.weight > 0) {
      this.addWeight(into, value.weight);
    }
  }

  private addWeight(into: PList | PDict, weight: number): void {
    into.weight += weight;
    if (into.weight > this.limits.maxConsumed) {
      this.limit(
        `${this.hooks.consumed ?? 'values'} after memo expansion, a container repeated through ` +
          'the memo counting each time',
        this.limits.maxConsumed,
      );
    }
  }

  /** Counts `n` more values held in kept containers. */
  protected hold(n: number): void {
    this.items += n;
    if (this.items > this.limits.maxItems) {
      this.limit('values in lists, tuples and dicts', this.limits.maxItems);
    }
  }

  protected appendTo(list: PList, value: unknown): void {
    // Only a dict, or anything a list the hooks took over gets, may be consumed or replaced.
    if (list.sink === null && !(value instanceof PDict)) {
      this.keep(list, value);
      return;
    }
    const kept = this.hooks.append(list, value);
    if (kept === CONSUMED) this.addWeight(list, 1);
    else this.keep(list, kept);
  }

  /** Sets the key/value pairs `from[start, end)` in `dict`. */
  protected setItems(dict: PDict, from: unknown[], start: number, end: number): void {
    if ((end - start) % 2 !== 0) this.fail('key/value pairs after MARK', `${end - start} items`);
    const pairs = dict.pairs;
    for (let i = start; i < end; i += 2) {
      const key = from[i];
      if (key instanceof PDict || (key instanceof PList && !key.tuple)) {
        this.fail(
          'a hashable dict key (str, int, float, bool, None or a tuple of them)',
          machineTypeOf(key),
        );
      }
      this.items += 2;
      if (this.items > this.limits.maxItems) {
        this.limit('values in lists, tuples and dicts', this.limits.maxItems);
      }
      this.weigh(dict, key);
      this.weigh(dict, from[i + 1]);
      pairs.push(key, from[i + 1]);
    }
  }

  protected memoPut(index: number, value: unknown): void {
    if (index >= this.limits.maxMemo) this.limit('memo entries', this.limits.maxMemo);
    this.memo.put(index, value);
    if (this.memo.count > this.limits.maxMemo) this.limit('memo entries', this.limits.maxMemo);
    if (typeof value === 'string') {
      this.memoStringBytes += value.length;
      if (this.memoStringBytes > this.limits.maxMemoStringBytes) {
        this.limit('bytes of strings in the memo', this.limits.maxMemoStringBytes);
      }
    } else if (value instanceof PList || value instanceof PDict) {
      if (value.memo < 0) value.memo = index;
    }
  }

  /**
   * Commits the dict the fast paths read at the opcode being run (see `fast-paths.ts`), when the
   * limits leave room for all the opcodes would hold: its memo slots, its lists, then the dict,
   * pushed (when `flat`); a frame dict the hooks intern is pushed as their ref. Returns whether it
   * did; when not, nothing changed.
   */
  protected commitDict(fast: FastPaths, flat: boolean): boolean {
    const n = fast.n;
    const hook = this.hooks.smallDict;
    if (n <= 2 * FRAME_DICT_PAIRS) {
      if (!fast.frameShape || hook === undefined || !this.fits(fast, n + 1)) return false;
      const id = hook(fast.pairs, n >> 1);
      if (id < 0) return false;
      this.commitPending(fast, null, id);
      this.stack.push(this.hooks.ref?.(id));
      return true;
    }
    if (!flat || !this.fits(fast, n + fast.frames + fast.frameValues + FRAME_HELD)) return false;
    const dict = new PDict(fast.pairs.slice(0, n));
    this.commitPending(fast, dict, -1);
    this.items += n;
    this.stack.push(dict);
    return true;
  }

  /**
   * Commits the frames list the fast paths read at the opcode being run (see `fast-paths.ts`),
   * when the limits leave room for all the opcodes would hold: its memo slots, then the list,
   * pushed, its frame ids standing for its items. Returns whether it did; when not, nothing changed.
   */
  protected commitList(fast: FastPaths): boolean {
    if (!this.fits(fast, fast.frames + fast.frameValues + FRAME_HELD)) return false;
    const list = this.framesList(fast);
    this.commitPending(fast, list, -1);
    this.stack.push(list);
    return true;
  }

  /**
   * Whether `values` more values held (as many as the opcodes one by one would hold at once), and
   * the read's memo slots and strings, fit the limits.
   */
  private fits(fast: FastPaths, values: number): boolean {
    const { limits, memo } = this;
    const { count, stringBytes } = fast.pending;
    return (
      this.stack.length + values <= limits.maxItems &&
      this.marks.length + 2 <= limits.maxItems &&
      this.items + values <= limits.maxItems &&
      memo.next + count <= limits.maxMemo &&
      memo.count + count <= limits.maxMemo &&
      this.memoStringBytes + stringBytes <= limits.maxMemoStringBytes
    );
  }

  /**
   * Stores the read's pending memo slots (see `pending.ts`), in order: the container read (`self`,
   * or the hooks' ref `ref` standing for it), its strings, lists and frames. The limits were
   * checked for all of them at once (see {@link fits}).
   */
  private commitPending(fast: FastPaths, self: PDict | PList | null, ref: number): void {
    const { pending } = fast;
    const { memo } = this;
    const frames = this.hooks.frames;
    for (let k = 0; k < pending.count; k++) {
      const slot = pending.base + k;
      const kind = pending.kind[k];
      if (kind === SELF) {
        if (self === null) memo.putRef(slot, ref);
        else {
          memo.put(slot, self);
          self.memo = slot;
        }
      } else if (kind === STRING) {
        memo.put(slot, pending.strings[k]);
      } else if (kind === FRAME) {
        memo.putRef(slot, frames!.refOf(pending.at[k]!));
      } else {
        const list = kind === EMPTY ? new PList() : this.framesList(fast);
        memo.put(slot, list);
        list.memo = slot;
        (self as PDict).pairs[pending.at[k]!] = list;
      }
    }
    this.memoStringBytes += pending.stringBytes;
  }

  /** The frames list the fast paths read, its frame ids standing for its items. */
  private framesList(fast: FastPaths): PList {
    const list = new PList();
    list.standFor(fast.ids, fast.frames, this.hooks.frames!, fast.arena);
    this.items += fast.frames;
    return list;
  }

  protected memoGet(index: number): unknown {
    const value = this.memo.get(index);
    if (value === undefined) this.fail('a memo index that was stored', `index ${index}`);
    if (value === FORGOTTEN) {
      this.fail(
        'a memo index of a value that is still held',
        `index ${index}, ${this.hooks.readOnce ?? 'a value the reader took already'}`,
      );
    }
    return value;
  }
}
