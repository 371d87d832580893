/**
 * The pickle machine's state: the stack of values, the MARK positions (Python's metastack), the
 * memo table, and the accounting that enforces {@link UnpickleLimits} as containers grow: items
 * held, size after memo expansion, depth.
 */
import type { PickleInput } from './pickle-input';
import {
  type Container,
  dictKey,
  isContainer,
  typeOf,
  type UnpickledValue,
  type UnpickleLimits,
} from './pickle-values';

/** Stack, marks and memo of one unpickling, within its limits. */
export class PickleStack {
  private readonly stack: UnpickledValue[] = [];
  /** Stack positions of the MARKs, innermost last. */
  private readonly marks: number[] = [];
  /**
   * The memo: dense indices (what `BINPUT` and `MEMOIZE` write) in an array, any other index in a
   * map. A `Map` of every entry cost an eighth of the reading time of a large snapshot.
   */
  private readonly memoDense: (UnpickledValue | undefined)[] = [];
  private readonly memoSparse = new Map<number, UnpickledValue>();
  private memoEntries = 0;
  /**
   * Per container: its size after memo expansion (itself and everything under it) and depth. Plain
   * maps: the containers live as long as the reading anyway, and weak maps made the collector
   * take a quarter of the time on a large snapshot.
   */
  private readonly sizes = new Map<object, number>();
  private readonly depths = new Map<object, number>();
  private containers = 0;
  private items = 0;
  private expanded = 0;
  /** Memo entries at most: each is a value the pickle made, so twice the containers is ample. */
  private readonly maxMemo: number;

  constructor(
    private readonly input: PickleInput,
    readonly limits: UnpickleLimits,
  ) {
    this.maxMemo = 2 * limits.maxContainers;
  }

  /** Fails: the pickle asks for more than `most` of `what`. */
  limit(what: string, most: number): never {
    return this.input.fail(
      `at most ${most.toLocaleString('en-US')} ${what} (the pickle reader's limit)`,
      'more',
    );
  }

  push(value: UnpickledValue): void {
    if (this.stack.length >= this.limits.maxItems) {
      this.limit('values on the stack', this.limits.maxItems);
    }
    this.stack.push(value);
  }

  pop(): UnpickledValue {
    if (this.stack.length === 0) this.input.fail('a value on the stack', 'an empty stack');
    if (this.stack.length <= this.bottom()) this.input.fail('a value on the stack', 'a MARK');
    return this.stack.pop() as UnpickledValue;
  }

  top(): UnpickledValue {
    if (this.stack.length <= this.bottom()) {
      this.input.fail('a value on the stack', this.stack.length ? 'a MARK' : 'none');
    }
    return this.stack[this.stack.length - 1] as UnpickledValue;
  }

  /** Opens a MARK at the top of the stack. */
  mark(): void {
    if (this.marks.length >= this.limits.maxItems) this.limit('open MARKs', this.limits.maxItems);
    this.marks.push(this.stack.length);
  }

  /** Pops everything above the innermost MARK, and the MARK. */
  popMark(): UnpickledValue[] {
    const k = this.marks.pop();
    if (k === undefined) this.input.fail('a MARK before this opcode', 'no MARK on the stack');
    return this.stack.splice(k!);
  }

  /** Counts `item` into `container`: items held, size after memo expansion, depth. */
  added(container: Container, item: UnpickledValue): void {
    const limits = this.limits;
    if (++this.items > limits.maxItems) {
      this.limit('values in lists, tuples and dicts', limits.maxItems);
    }
    const weight = isContainer(item) ? (this.sizes.get(item) ?? 1) : 1;
    this.expanded += weight;
    if (this.expanded > limits.maxExpandedSize) {
      this.limit(
        'values after memo expansion (a value repeated through the memo counts each time)',
        limits.maxExpandedSize,
      );
    }
    this.sizes.set(container, (this.sizes.get(container) ?? 1) + weight);
    const depth = (isContainer(item) ? (this.depths.get(item) ?? 1) : 0) + 1;
    if (depth > (this.depths.get(container) ?? 1)) {
      if (depth > limits.maxDepth) this.limit('levels of nesting', limits.maxDepth);
      this.depths.set(container, depth);
    }
  }

  /** Registers a new container holding `initial` (already in it). */
  made<T extends Container>(container: T, initial: readonly UnpickledValue[] = []): T {
    if (++this.containers > this.limits.maxContainers) {
      this.limit('lists, tuples, sets and dicts', this.limits.maxContainers);
    }
    this.sizes.set(container, 1);
    this.depths.set(container, 1);
    for (const item of initial) this.added(container, item);
    return container;
  }

  /** `value` as a list, for opcode `what`. */
  list(value: UnpickledValue, what: string): UnpickledValue[] {
    if (!Array.isArray(value)) this.input.fail(`a list under ${what}`, typeOf(value));
    return value as UnpickledValue[];
  }

  /** `value` as a dict, for opcode `what`. */
  dict(value: UnpickledValue, what: string): { [key: string]: UnpickledValue } {
    if (!isContainer(value) || Array.isArray(value)) {
      this.input.fail(`a dict under ${what}`, typeOf(value));
    }
    return value as { [key: string]: UnpickledValue };
  }

  /** Sets the key/value `pairs` (alternating) in `target`. */
  setItems(target: { [key: string]: UnpickledValue }, pairs: UnpickledValue[]): void {
    if (pairs.length % 2 !== 0) {
      this.input.fail('key/value pairs after MARK', `${pairs.length} items`);
    }
    for (let i = 0; i < pairs.length; i += 2) {
      const key = dictKey(pairs[i]!);
      if (key === null) {
        this.input.fail(
          'a hashable dict key (str, int, float, bool, None or a short tuple of them)',
          typeOf(pairs[i]),
        );
      }
      this.added(target, pairs[i + 1]!);
      target[key!] = pairs[i + 1]!;
    }
  }

  /** Entries in the memo (the index `MEMOIZE` stores at). */
  get memoSize(): number {
    return this.memoEntries;
  }

  memoPut(index: number, value: UnpickledValue): void {
    const dense = this.memoDense;
    if (index < dense.length) {
      dense[index] = value;
      return;
    }
    const present = this.memoSparse.has(index);
    if (!present) {
      if (this.memoEntries >= this.maxMemo) this.limit('memo entries', this.maxMemo);
      this.memoEntries++;
    }
    if (index === dense.length) {
      // The dense part grows one index at a time, so no index it covers stays in the map.
      if (present) this.memoSparse.delete(index);
      dense.push(value);
    } else {
      this.memoSparse.set(index, value);
    }
  }

  memoGet(index: number): UnpickledValue {
    if (index < this.memoDense.length) return this.memoDense[index] as UnpickledValue;
    if (!this.memoSparse.has(index)) {
      this.input.fail('a memo index that was stored', `index ${index}`);
    }
    return this.memoSparse.get(index)!;
  }

  /** Stack position of the innermost MARK, or 0. */
  private bottom(): number {
    return this.marks.length > 0 ? this.marks[this.marks.length - 1]! : 0;
  }
}
