/**
 * Which `str` objects of a PyTorch snapshot are one object, and so pickled once and referred to
 * after (`BINGET`), and which are new each time.
 *
 * - PyTorch builds each dict key once per snapshot (`py::str action_s = "action"`) and so each
 *   action name, segment type and block state: one object each, whatever the count of entries.
 * - CPython has one empty string and one string per character below U+0100: after `pickle.load`,
 *   every `''` or `'a'` is the same object, so a faithful writer memoizes them by value too.
 * - Every other value (a `compile_context`, a file name in a frame) is a new object each time
 *   PyTorch converts it from C++.
 */
import type { PickleWriter } from '@allot/pickle';

/** Whether CPython keeps one object for this string (empty, or one character below U+0100). */
export function isSingletonString(value: string): boolean {
  return value.length === 0 || (value.length === 1 && value.charCodeAt(0) < 0x100);
}

/**
 * Strings memoized by value within one scope (the strings one C++ function made once): each is
 * written once and referred to after. Scopes made by {@link scope} share CPython's one-object
 * strings, which are the same object whoever made them.
 */
export class InternedStrings {
  private readonly memo = new Map<string, number>();

  constructor(
    private readonly writer: PickleWriter,
    private readonly singletons = new Map<string, number>(),
  ) {}

  /** Another scope: the same text there is another object, except CPython's one-object strings. */
  scope(): InternedStrings {
    return new InternedStrings(this.writer, this.singletons);
  }

  /** Writes `value`, or a reference to it when it was written before in this scope. */
  write(value: string): number {
    const memo = isSingletonString(value) ? this.singletons : this.memo;
    const index = memo.get(value);
    if (index !== undefined) {
      this.writer.get(index);
      return index;
    }
    const created = this.writer.str(value);
    memo.set(value, created);
    return created;
  }

  /** Writes a string made afresh: a new object unless CPython keeps one for it. */
  fresh(value: string): void {
    if (isSingletonString(value)) this.write(value);
    else this.writer.str(value);
  }
}

/**
 * A fixed list of interned strings with their memo indices in an array, for the keys and values
 * written on every trace entry (a `Map` look-up each time costs more than the write).
 */
export class StringTable {
  private readonly memo: Int32Array;

  constructor(
    private readonly writer: PickleWriter,
    private readonly interned: InternedStrings,
    private readonly names: readonly string[],
  ) {
    this.memo = new Int32Array(names.length).fill(-1);
  }

  /** Writes string `id` of the table, or a reference to it. */
  write(id: number): void {
    const index = this.memo[id]!;
    if (index >= 0) this.writer.get(index);
    else this.memo[id] = this.interned.write(this.names[id]!);
  }
}
