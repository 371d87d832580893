/**
 * What the streaming pickle machine holds and how it is bounded: the stack of values, the MARK
 * positions, the chunked memo, and the accounting that keeps them within {@link MachineLimits},
 * what the consumed values expand to included. The opcode loop and the chunks are
 * {@link PickleMachine}'s.
 */
import { EMPTY_LIST, type FlatDict } from './flat-dict';
import type { FramesList } from './frames-list';
import { DEFAULT_MACHINE_LIMITS, type MachineHooks, type MachineLimits } from './hooks';
import { lineValue, memoIndex, takesLine } from './line-operands';
import { FORGOTTEN, Memo } from './memo';
import { Op, refusal } from './opcodes';
import { latin1 } from './operands';
import { type PickleErrorFactory, pickleErrors } from './pickle-error';
import type { SmallDict } from './small-dict';
import { CONSUMED, machineTypeOf, PDict, PList } from './values';

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
   * Commits the small dict at the opcode being run (see `small-dict.ts`), when the hooks
   * intern it and the memo has room: its slot takes the hooks' ref, its new strings the slots after
   * it, and the ref goes on the stack. Returns whether it did; when not, nothing changed.
   */
  protected commitSmallDict(dict: SmallDict): boolean {
    const hook = this.hooks.smallDict;
    const strings = dict.strings;
    const index = this.memo.next;
    const slots = 1 + dict.count;
    let bytes = 0;
    for (let i = 0; i < dict.count; i++) bytes += strings[i]!.length;
    if (
      hook === undefined ||
      this.stack.length >= this.limits.maxItems ||
      index + slots > this.limits.maxMemo ||
      this.memo.count + slots > this.limits.maxMemo ||
      this.memoStringBytes + bytes > this.limits.maxMemoStringBytes
    ) {
      return false;
    }
    const id = hook(dict.pairs, dict.size, dict.slots);
    if (id < 0) return false;
    this.memo.putRef(index, id);
    for (let i = 0; i < dict.count; i++) this.memoPut(index + 1 + i, strings[i]);
    this.stack.push(this.hooks.ref?.(id));
    return true;
  }

  /**
   * Commits the frames list at the opcode being run (see `frames-list.ts`), when the
   * limits leave room for all the opcodes would hold: its memo slots, then the list, pushed, its
   * frame ids standing for its items. Returns whether it did; when not, nothing changed.
   */
  protected commitFramesList(read: FramesList): boolean {
    const limits = this.limits;
    const n = read.n;
    if (
      this.stack.length + n + 1 > limits.maxItems ||
      this.marks.length >= limits.maxItems ||
      this.items + n > limits.maxItems ||
      read.base !== this.memo.next ||
      !this.memoFits(read.count, read.stringBytes)
    ) {
      return false;
    }
    this.stack.push(this.buildFramesList(read));
    return true;
  }

  /**
   * Commits the dict at the opcode being run (see `flat-dict.ts`), when the limits leave
   * room for all the opcodes would hold: its memo slots, its lists, then the dict, pushed. Returns
   * whether it did; when not, nothing changed.
   */
  protected commitFlatDict(read: FlatDict): boolean {
    const limits = this.limits;
    const n = read.n;
    const list = read.framesAt >= 0 ? read.frames : null;
    const items = list === null ? 0 : list.n;
    if (
      this.stack.length + n + items + 2 > limits.maxItems ||
      this.marks.length + 2 > limits.maxItems ||
      this.items + n + items > limits.maxItems ||
      !this.memoFits(read.count, read.stringBytes + (list === null ? 0 : list.stringBytes))
    ) {
      return false;
    }
    const dict = new PDict(read.pairs.slice(0, n));
    const pairs = dict.pairs;
    this.memoPut(this.memo.next, dict);
    for (let k = 1; k < read.logs; k++) {
      const kind = read.kinds[k]!;
      if (kind === 0) {
        this.memoPut(this.memo.next, read.strings[k]);
      } else if (kind === EMPTY_LIST) {
        const empty = new PList();
        this.memoPut(this.memo.next, empty);
        pairs[read.listPair[k]!] = empty;
      } else {
        pairs[read.framesAt] = this.buildFramesList(list!);
      }
    }
    this.items += n;
    this.stack.push(dict);
    return true;
  }

  /** Whether `slots` more memo slots, strings of `stringBytes` characters among them, fit. */
  private memoFits(slots: number, stringBytes: number): boolean {
    const limits = this.limits;
    return (
      this.memo.next + slots <= limits.maxMemo &&
      this.memo.count + slots <= limits.maxMemo &&
      this.memoStringBytes + stringBytes <= limits.maxMemoStringBytes
    );
  }

  /** The frames list `read`, its memo slots stored (from the memo's next one, its `base`). */
  private buildFramesList(read: FramesList): PList {
    const hooks = this.hooks.frames!;
    const n = read.n;
    const index = read.base;
    const list = new PList();
    list.standFor(read.ids, n, hooks, read.arena);
    this.items += n;
    this.memoPut(index, list);
    for (let k = 1; k < read.count; k++) {
      const id = read.slots[k - 1]!;
      if (id >= 0) this.memo.putRef(index + k, hooks.refOf(id));
      else this.memoPut(index + k, read.strings[k]!);
    }
    return list;
  }

  protected memoGet(index: number): unknown {
    const value = this.memo.get(index);
    if (value === undefined) this.fail('a memo index that was stored', `index ${index}`);
    if (value === FORGOTTEN) {
      this.fail(
        'a memo index of a value that is still held',
        `index ${index}, a trace entry already read (a snapshot refers to each entry once)`,
      );
    }
    return value;
  }
}
