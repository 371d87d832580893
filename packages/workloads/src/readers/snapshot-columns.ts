/**
 * One device's trace entries of a PyTorch memory snapshot as typed columns: what the replay, the
 * report and the fidelity check use of each entry, and nothing else (`compile_context`,
 * `user_metadata` and the like are dropped as the entry is read).
 *
 * ```
 * entry i:  action[i]  Uint8    an Action code (INVALID when the entry is malformed: see `problems`)
 *           addr[i]    Float64  NaN when absent or not an address
 *           size[i]    Float64  NaN when absent or not a number
 *           stream[i]  Float64  0 when absent
 *           time[i]    Float64  µs, NaN when absent
 *           stack[i]   Int32    the entry's stack in the snapshot's StackTable, 0 for none
 * ```
 *
 * About 37 bytes an entry: a million-entry trace in 37 MB whatever its stacks. The streaming
 * reader fills the columns as the pickle is read; a snapshot read whole (JSON) fills them the same
 * way, so both go through one set of rules.
 */
import { parseAddress } from './pointer-events';

/** Entry actions, as {@link SnapshotColumns.action} codes. */
export const Action = {
  alloc: 0,
  free_requested: 1,
  free_completed: 2,
  free: 3,
  segment_alloc: 4,
  segment_free: 5,
  segment_map: 6,
  segment_unmap: 7,
  oom: 8,
  snapshot: 9,
  INVALID: 255,
} as const;

const ACTION_CODES = new Map<string, number>(
  Object.entries(Action).filter(([name]) => name !== 'INVALID'),
);

/** Why an entry is malformed, for the error its trace's build raises at that entry. */
export interface EntryProblem {
  /** What was expected (the TraceFormatError's `expected`). */
  readonly expected: string;
  /** What was found. */
  readonly found: string;
}

/** Reads a field of an entry: a dict of the pickle machine, or a parsed JSON object. */
export type FieldReader = (entry: unknown, key: string) => unknown;

/** The stack of an entry's `frames` in the snapshot's stack table (0 for none). */
export type StackReader = (frames: unknown) => number;

function grow<T extends Float64Array | Int32Array | Uint8Array>(array: T, need: number): T {
  if (need <= array.length) return array;
  const next = new (array.constructor as new (n: number) => T)(
    Math.max(need, Math.ceil(array.length * 1.5)),
  );
  next.set(array);
  return next;
}

/** One device trace's entries. */
export class SnapshotColumns {
  length = 0;
  action = new Uint8Array(1024);
  addr = new Float64Array(1024);
  size = new Float64Array(1024);
  stream = new Float64Array(1024);
  time = new Float64Array(1024);
  stack = new Int32Array(1024);
  /** Whether any entry is a `free_completed` (else frees happen at `free_requested`). */
  hasFreeCompleted = false;
  /** Malformed entries, by index. */
  readonly problems = new Map<number, EntryProblem>();
  /** The `device_free` of each `oom` entry, by index (NaN when absent or not a number). */
  readonly deviceFree = new Map<number, number>();
  /** Entries whose `addr` is no address, by index: malformed where the event needs one. */
  readonly addrProblems = new Map<number, EntryProblem>();

  /**
   * @param maxEntries - most entries (the event limit): one past it throws through `tooMany`.
   */
  constructor(
    private readonly maxEntries: number,
    private readonly tooMany: (entries: number) => never,
  ) {}

  /**
   * Hands the columns' memory back now (see `freeBuffers`), once the trace is built from them: the
   * columns are empty from here.
   */
  release(): void {
    this.length = 0;
    this.action = new Uint8Array(0);
    this.addr = new Float64Array(0);
    this.size = new Float64Array(0);
    this.stream = new Float64Array(0);
    this.time = new Float64Array(0);
    this.stack = new Int32Array(0);
  }

  /** Appends a malformed entry (not a dict at all, say). */
  addProblem(problem: EntryProblem): void {
    const i = this.next();
    this.action[i] = Action.INVALID;
    this.problems.set(i, problem);
  }

  /**
   * Appends `entry`, read through `field`; its stack (allocations and out-of-memory entries only)
   * is what `stackOf` gives for its `frames`.
   */
  add(
    entry: unknown,
    field: FieldReader,
    describe: (value: unknown) => string,
    stackOf: StackReader,
  ): void {
    const i = this.next();
    const action = field(entry, 'action');
    if (typeof action !== 'string') {
      this.action[i] = Action.INVALID;
      this.problems.set(i, { expected: 'an `action` string', found: describe(action) });
      return;
    }
    const code = ACTION_CODES.get(action);
    this.time[i] = numberOf(field(entry, 'time_us'));
    if (code === undefined) {
      this.action[i] = Action.INVALID;
      this.problems.set(i, {
        expected:
          'an action among alloc, free_requested, free_completed, segment_alloc, segment_free, ' +
          'segment_map, segment_unmap, oom, snapshot',
        found: JSON.stringify(action),
      });
      return;
    }
    this.action[i] = code;
    if (code === Action.free_completed) this.hasFreeCompleted = true;
    if (code === Action.oom || code === Action.snapshot) {
      this.size[i] = numberOf(field(entry, 'size'));
      this.addr[i] = parseAddress(field(entry, 'addr'));
      this.stream[i] = numberOf(field(entry, 'stream')) || 0;
      if (code === Action.oom) {
        this.stack[i] = stackOf(field(entry, 'frames'));
        this.deviceFree.set(i, numberOf(field(entry, 'device_free')));
      } else {
        this.stack[i] = 0;
      }
      return;
    }
    const size = field(entry, 'size');
    const bytes = numberOf(size);
    this.size[i] = bytes;
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      this.problems.set(i, {
        expected: `a non-negative integer \`size\` for ${action}`,
        found: describe(size),
      });
    }
    const addr = field(entry, 'addr');
    this.addr[i] = parseAddress(addr);
    if (Number.isNaN(this.addr[i]!)) {
      this.addrProblems.set(i, {
        expected: `an \`addr\` (a non-negative integer) for ${action}`,
        found: describe(addr),
      });
    }
    this.stream[i] = numberOf(field(entry, 'stream')) || 0;
    this.stack[i] = code === Action.alloc ? stackOf(field(entry, 'frames')) : 0;
  }

  private next(): number {
    const i = this.length;
    if (i >= this.maxEntries) this.tooMany(i + 1);
    if (i >= this.action.length) {
      const need = i + 1;
      this.action = grow(this.action, need);
      this.addr = grow(this.addr, need);
      this.size = grow(this.size, need);
      this.stream = grow(this.stream, need);
      this.time = grow(this.time, need);
      this.stack = grow(this.stack, need);
    }
    this.length = i + 1;
    return i;
  }
}

/** A number from a recorded value (a bigint converted; NaN for anything else). */
export function numberOf(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  return Number.NaN;
}
