/**
 * A PyTorch memory snapshot read in one streaming pass: pickle bytes in, the snapshot's records
 * out, without the generic value tree.
 *
 * ```
 *  chunks ─► PickleMachine ─► a trace entry, as its device list takes it ─► SnapshotColumns
 *                          ─► a frame dict {filename, line, name}         ─► StackTable (interned)
 *                          ─► anything else (segments, settings: small)   ─► kept, made plain at end
 * ```
 *
 * The machine hands each container to the hooks here as its parent list takes it, complete. An
 * entry (a dict with an `action`) goes into its list's columns and is dropped, memo slot and all;
 * a frame dict becomes its interned {@link FrameRef}, in the memo too, so the next entry that
 * shares it gets the ref; an entry's `frames` list, once used, is emptied and stands for its
 * interned stack (its sink the stack's id), since PyTorch shares one list between a block, its
 * `segment_alloc` and its `alloc`. What stays is the columns, the distinct frames and stacks, and
 * the end state's segments. Browser-safe: no Node module.
 */
import {
  CONSUMED,
  DEFAULT_MACHINE_LIMITS,
  type MachineLimits,
  machineTypeOf,
  PDict,
  PickleMachine,
  PList,
  plainValue,
} from '@allot/pickle';
import { TraceFormatError } from '../errors';
import { DEFAULT_MAX_EVENTS } from '../trace';
import { FrameDicts } from './frame-dicts';
import { Action, SnapshotColumns } from './snapshot-columns';
import { FrameRef, StackRef, StackTable } from './stack-table';

/** What a snapshot holds, as the trace builder needs it. */
export interface SnapshotRecords {
  /** The end state's `segments`, as plain values (undefined when absent). */
  readonly segments: unknown;
  /** `allocator_settings`, as plain values (undefined when absent). */
  readonly allocatorSettings: unknown;
  /**
   * `device_traces`: per device, its entries as columns, or a plain value that is no list of
   * entries (for the error); undefined when the snapshot has no `device_traces`.
   */
  readonly devices: unknown;
  /** The snapshot itself when it is no dict (for the error). */
  readonly notADict?: unknown;
  /** The interned frames and stacks of the entries. */
  readonly stacks: StackTable;
}

/** Options of {@link SnapshotStream}. */
export interface SnapshotStreamOptions {
  /** Label in error messages. @defaultValue 'snapshot' */
  readonly name?: string;
  /** Most entries per device. @defaultValue DEFAULT_MAX_EVENTS */
  readonly maxEvents?: number;
  /** Bounds on what the pickle may hold at once. */
  readonly limits?: Partial<MachineLimits>;
}

/**
 * Actions whose stack is kept: an allocation's (the report shows it), an out-of-memory's, and a
 * segment's, whose list PyTorch shares with the allocation that caused it. A free's is dropped.
 */
const KEEPS_STACK = new Set<unknown>(['alloc', 'oom', 'segment_alloc', 'segment_map']);

/** The keys and actions the reader compares a snapshot's strings with (see `MachineHooks.strings`). */
const KNOWN_STRINGS = [
  'action',
  'addr',
  'size',
  'stream',
  'time_us',
  'frames',
  'device_free',
  'filename',
  'line',
  'name',
  'device_traces',
  'segments',
  'allocator_settings',
  ...Object.keys(Action).filter((action) => action !== 'INVALID'),
];

function field(entry: unknown, key: string): unknown {
  return (entry as PDict).get(key);
}

/** Reads a snapshot pickle pushed in chunks. */
export class SnapshotStream {
  private readonly machine: PickleMachine;
  readonly stacks = new StackTable();
  private readonly frameDicts = new FrameDicts(this.stacks);
  private readonly name: string;
  private readonly maxEvents: number;
  /** Entries read so far, over every device. */
  entries = 0;
  /** The stack of the entry being added, and its reader (one function for every entry). */
  private stack = 0;
  private readonly stackOfEntry = () => this.stack;

  constructor(options: SnapshotStreamOptions = {}) {
    this.name = options.name ?? 'snapshot';
    this.maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
    const name = this.name;
    this.machine = new PickleMachine(
      {
        append: (list, value) => this.append(list, value),
        ref: (id) => ((id & 1) === 1 ? this.stacks.stackRef(id >>> 1) : this.stacks.refs[id >>> 1]),
        smallDict: (pairs, size, slots) => {
          const id = this.frameDicts.id(pairs, size, slots, true);
          return id < 0 ? -1 : id << 1;
        },
        frames: {
          frameOf: (ref) => ((ref & 1) === 0 ? ref >>> 1 : -1),
          refOf: (id) => id << 1,
          find: (pairs, size, slots) => this.frameDicts.id(pairs, size, slots, false),
          item: (id) => this.stacks.refs[id],
        },
        strings: KNOWN_STRINGS,
        consumed: 'trace entries',
      },
      {
        // Entries are what a snapshot expands to: the event limit bounds them, repeats included.
        limits: { ...DEFAULT_MACHINE_LIMITS, ...options.limits, maxConsumed: this.maxEvents },
        error: (offset, expected, found) =>
          new TraceFormatError(name, offset, expected, found, 'byte'),
      },
    );
  }

  /** Bytes of pickle taken so far. */
  get bytesIn(): number {
    return this.machine.bytesIn;
  }

  /** Whether the pickle's STOP was read (bytes after it are not needed). */
  get complete(): boolean {
    return this.machine.stopped;
  }

  push(chunk: Uint8Array): void {
    this.machine.push(chunk);
  }

  /** The input ended: the snapshot's records. */
  end(): SnapshotRecords {
    const root = this.machine.end();
    const stacks = this.stacks;
    if (!(root instanceof PDict))
      return {
        segments: undefined,
        allocatorSettings: undefined,
        devices: undefined,
        notADict: root instanceof PList ? [] : root,
        stacks,
      };
    const traces = root.get('device_traces');
    let devices: (SnapshotColumns | unknown)[] | undefined;
    if (traces instanceof PList && !traces.tuple) {
      devices = traces.items.map((list) =>
        list instanceof PList && !list.tuple && list.items.length === 0
          ? list.sink instanceof SnapshotColumns
            ? list.sink
            : []
          : this.plain(list),
      );
    } else if (traces !== undefined) {
      devices = this.plain(traces) as unknown[];
    }
    return {
      segments: this.plain(root.get('segments')),
      allocatorSettings: this.plain(root.get('allocator_settings')),
      devices,
      stacks,
    };
  }

  private append(list: PList, value: unknown): unknown {
    const sink = list.sink;
    // A list the hooks took over for something else (a stack's frames) keeps what it is given.
    if (sink !== null && !(sink instanceof SnapshotColumns)) return value;
    if (!(value instanceof PDict)) {
      if (sink === null) return value;
      sink.addProblem({ expected: 'a trace entry dict', found: machineTypeOf(value) });
      this.entries++;
      return CONSUMED;
    }
    const frame = this.frameDicts.id(value.pairs, value.size, null, true);
    if (frame >= 0) {
      this.machine.replaceRef(value.memo, frame << 1);
      this.machine.release(value.pairs.length);
      return this.stacks.refs[frame];
    }
    if (value.get('action') === undefined) {
      if (sink === null) return value;
      sink.addProblem({ expected: 'an `action` string', found: 'nothing' });
      this.entries++;
      return CONSUMED;
    }
    const columns = sink ?? this.deviceColumns(list);
    this.stack = this.stackOfFrames(value.get('frames'), KEEPS_STACK.has(value.get('action')));
    columns.add(value, field, machineTypeOf, this.stackOfEntry);
    this.entries++;
    this.machine.forget(value.memo);
    this.machine.release(value.pairs.length);
    return CONSUMED;
  }

  /** New columns for `list`, a device's trace (its first entry has come). */
  private deviceColumns(list: PList): SnapshotColumns {
    const device = `${this.name} (device_traces)`;
    const columns = new SnapshotColumns(this.maxEvents, (n) => {
      throw new TraceFormatError(
        device,
        n,
        `at most ${this.maxEvents.toLocaleString('en-US')} events (the event limit)`,
        'more events',
        'event',
      );
    });
    list.sink = columns;
    return columns;
  }

  /**
   * The stack of an entry's `frames`: a list of frames, interned (or, for an entry whose stack
   * nothing uses, `keep` false, dropped) and then emptied, so that the list stands for its stack
   * from then on (in the memo too, where a later entry may take it again: PyTorch shares one list
   * between a block, its `segment_alloc` and its `alloc`); or such a list, or its ref, again.
   */
  private stackOfFrames(frames: unknown, keep: boolean): number {
    if (frames instanceof StackRef) return frames.id;
    if (!(frames instanceof PList) || frames.tuple) return 0;
    // A list used before stands for its stack (its sink the stack's id).
    if (typeof frames.sink === 'number') return frames.sink;
    if (frames.sink !== null) return 0;
    // A list the fast path read holds frame ids (unless something asked for its items).
    const ids = frames.frameIds;
    const stack = !keep
      ? 0
      : ids !== null
        ? this.stacks.stackOfIds(ids, frames.frameCount, frames.frameFrom)
        : this.stacks.stackOf(frames.items);
    frames.sink = stack;
    this.machine.release(frames.length);
    frames.drop();
    this.machine.replaceRef(frames.memo, (stack << 1) | 1);
    return stack;
  }

  /** A machine value as plain values, frame refs as their frames (see {@link plainValue}). */
  private plain(value: unknown): unknown {
    return plainValue(value, {
      at: this.machine.bytesIn,
      error: this.machine.error,
      maxVisits: this.machine.limits.maxItems,
      // A list that stands for its interned stack stays the stack's ref: a block's frames are
      // read as the stack's id, never made again for each block that shares them.
      frame: (ref) => {
        if (ref instanceof FrameRef) return this.stacks.frames[ref.id];
        if (ref instanceof StackRef) return ref;
        return ref instanceof PList && typeof ref.sink === 'number'
          ? this.stacks.stackRef(ref.sink)
          : undefined;
      },
    });
  }
}
