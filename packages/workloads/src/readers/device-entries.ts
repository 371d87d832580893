/**
 * One device's trace entries of a PyTorch memory snapshot, each written once, as it is read, into a
 * row of a {@link PointerTrace} whose op is the entry's action: what the replay, the report and the
 * fidelity check use of it, and nothing else (`compile_context`, `user_metadata` and the like are
 * dropped as the entry is read). The rows become the trace's columns when it is built
 * (`snapshot-traces.ts`).
 *
 * ```
 * entry i:  op        an Action (INVALID when the entry is malformed: see `problems`)
 *           address   NaN when absent or not an address
 *           size      NaN when absent or not a number
 *           stream    0 when absent
 *           time      µs, NaN when absent
 *           stack     the entry's stack in the snapshot's StackTable, 0 for none
 *           location  i + 1
 * ```
 *
 * About 37 bytes an entry: a million-entry trace in 37 MB whatever its stacks. The streaming
 * reader fills the rows as the pickle is read; a snapshot read whole (JSON) fills them the same
 * way, so both go through one set of rules.
 */
import type { PDict } from '@allot/pickle';
import { PointerTrace } from './pointer-trace';
import { type Dict, describe, fieldOf, numberOf, parseAddress } from './recorded-values';

/** Entry actions, as row ops ({@link PointerTrace}'s codes: alloc and the frees first). */
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

/** The stack of an entry's `frames` in the snapshot's stack table (0 for none). */
export type StackReader = (frames: unknown) => number;

/** One device trace's entries. */
export class DeviceEntries {
  readonly rows: PointerTrace;
  /** Whether any entry is a `free_completed` (else frees happen at `free_requested`). */
  hasFreeCompleted = false;
  /** Malformed entries, by index. */
  readonly problems = new Map<number, EntryProblem>();
  /** The `device_free` of each `oom` entry, by index (NaN when absent or not a number). */
  readonly deviceFree = new Map<number, number>();
  /** Entries whose `addr` is no address, by index: malformed where the event needs one. */
  readonly addressProblems = new Map<number, EntryProblem>();

  /**
   * @param source - label for the errors of the device's entries.
   * @param maxEntries - most entries (the event limit): one past it throws.
   */
  constructor(source: string, maxEntries: number) {
    this.rows = new PointerTrace(source, 'event', maxEntries);
  }

  /** Entries so far. */
  get length(): number {
    return this.rows.length;
  }

  /** Appends a malformed entry (not a dict at all, say). */
  addProblem(problem: EntryProblem): void {
    this.problems.set(this.rows.length, problem);
    this.rows.add(Action.INVALID, Number.NaN, Number.NaN, 0, this.rows.length + 1);
  }

  /**
   * Appends `entry`; its stack (allocations and out-of-memory entries only) is what `stackOf`
   * gives for its `frames`.
   */
  add(entry: Dict | PDict, stackOf: StackReader): void {
    const i = this.rows.length;
    const action = fieldOf(entry, 'action');
    if (typeof action !== 'string') {
      this.addProblem({ expected: 'an `action` string', found: describe(action) });
      return;
    }
    const code = ACTION_CODES.get(action);
    const time = numberOf(fieldOf(entry, 'time_us'));
    if (code === undefined) {
      this.addProblem({
        expected:
          'an action among alloc, free_requested, free_completed, segment_alloc, segment_free, ' +
          'segment_map, segment_unmap, oom, snapshot',
        found: JSON.stringify(action),
      });
      return;
    }
    if (code === Action.free_completed) this.hasFreeCompleted = true;
    const size = fieldOf(entry, 'size');
    const addr = fieldOf(entry, 'addr');
    const bytes = numberOf(size);
    const address = parseAddress(addr);
    const stream = numberOf(fieldOf(entry, 'stream')) || 0;
    let op: number = code;
    let stack = 0;
    if (code === Action.oom || code === Action.snapshot) {
      if (code === Action.oom) {
        stack = stackOf(fieldOf(entry, 'frames'));
        this.deviceFree.set(i, numberOf(fieldOf(entry, 'device_free')));
      }
    } else {
      if (!Number.isSafeInteger(bytes) || bytes < 0) {
        op = Action.INVALID;
        this.problems.set(i, {
          expected: `a non-negative integer \`size\` for ${action}`,
          found: describe(size),
        });
      }
      if (Number.isNaN(address)) {
        this.addressProblems.set(i, {
          expected: `an \`addr\` (a non-negative integer) for ${action}`,
          found: describe(addr),
        });
      }
      if (code === Action.alloc) stack = stackOf(fieldOf(entry, 'frames'));
    }
    this.rows.add(op, address, bytes, stream, i + 1, time, stack);
  }
}
