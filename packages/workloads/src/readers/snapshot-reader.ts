/**
 * A PyTorch memory snapshot read in one streaming pass: pickle bytes in, the snapshot's records
 * out, without a tree of its values.
 *
 * ```
 *  chunks ─► PickleMachine ─► a trace entry, as its device list takes it ─► DeviceEntries (a row)
 *                          ─► a segment, as the `segments` list takes it  ─► EndSegment (a record)
 *                          ─► a frame dict {filename, line, name}         ─► StackTable (interned)
 *  end() ─► the root dict: its device lists' entries, the segments, the settings' alloc conf
 * ```
 *
 * The machine hands each container to the hooks here as its parent list takes it, complete. An
 * entry (a dict with an `action`) is written into its list's rows and dropped, memo slot and all;
 * so is a segment (a dict with a `total_size`), read with its blocks, whose list is dropped too (a
 * snapshot refers to each entry, segment and blocks list once: a second reference is refused). A
 * frame dict becomes its interned {@link FrameRef}, in the memo too, so the next entry that shares
 * it gets the ref; an entry's or a block's `frames` list, once used, is emptied and stands for its
 * interned stack (its sink the stack's id), since PyTorch shares one list between a block, its
 * `segment_alloc` and its `alloc`. What stays is the rows, the segments, and the distinct frames
 * and stacks. Browser-safe: no Node module.
 */
import {
  CONSUMED,
  DEFAULT_MACHINE_LIMITS,
  type MachineLimits,
  machineTypeOf,
  PDict,
  PickleMachine,
  PList,
} from '@allot/pickle';
import { TraceFormatError } from '../errors';
import { DEFAULT_MAX_EVENTS } from '../trace';
import { Action, DeviceEntries } from './device-entries';
import { type EndSegment, readSegment } from './end-state';
import { itemsOf } from './recorded-values';
import { allocConfOf, type SnapshotRecords } from './snapshot-traces';
import { StackRef, StackTable } from './stack-table';

/** What a list of the end state's segments holds: their records. */
class EndSegments {
  readonly segments: EndSegment[] = [];
}

/** Options of {@link SnapshotReader}. */
export interface SnapshotReaderOptions {
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
  'total_size',
  'blocks',
  ...Object.keys(Action).filter((action) => action !== 'INVALID'),
];

/** Reads a snapshot pickle pushed in chunks. */
export class SnapshotReader {
  private readonly machine: PickleMachine;
  readonly stacks = new StackTable();
  private readonly name: string;
  private readonly maxEvents: number;
  /** Entries read so far, over every device. */
  entries = 0;
  /** The stack of the entry being added, and its reader (one function for every entry). */
  private stack = 0;
  private readonly stackOfEntry = () => this.stack;
  private readonly stackOfBlock = (frames: unknown) => this.stackOfFrames(frames, true);

  constructor(options: SnapshotReaderOptions = {}) {
    this.name = options.name ?? 'snapshot';
    this.maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
    const name = this.name;
    this.machine = new PickleMachine(
      {
        append: (list, value) => this.append(list, value),
        ref: (id) => ((id & 1) === 1 ? this.stacks.stackRef(id >>> 1) : this.stacks.refs[id >>> 1]),
        smallDict: (pairs, size) => {
          const id = this.stacks.frameIdOf(pairs, size);
          return id < 0 ? -1 : id << 1;
        },
        frames: {
          frameOf: (ref) => ((ref & 1) === 0 ? ref >>> 1 : -1),
          refOf: (id) => id << 1,
          find: (pairs, size) => this.stacks.frameIdOf(pairs, size),
          item: (id) => this.stacks.refs[id],
        },
        strings: KNOWN_STRINGS,
        consumed: 'trace entries',
        readOnce: 'a trace entry, segment or blocks list read already (a snapshot has each once)',
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
    if (!(root instanceof PDict)) {
      return { devices: undefined, segments: [], allocConf: undefined, notADict: root, stacks };
    }
    const traces = root.get('device_traces');
    // A device's list of entries is its rows; any other (kept whole) says what it holds instead.
    const devices =
      itemsOf(traces)?.map((list) =>
        list instanceof PList && list.length === 0 && list.sink instanceof DeviceEntries
          ? list.sink
          : list,
      ) ?? traces;
    const segments = root.get('segments');
    return {
      devices,
      segments:
        segments instanceof PList && segments.sink instanceof EndSegments
          ? segments.sink.segments
          : [],
      allocConf: allocConfOf(root.get('allocator_settings')),
      stacks,
    };
  }

  private append(list: PList, value: unknown): unknown {
    const sink = list.sink;
    // A list the hooks took over for something else (a stack's frames) keeps what it is given.
    if (sink !== null && !(sink instanceof DeviceEntries) && !(sink instanceof EndSegments)) {
      return value;
    }
    if (!(value instanceof PDict)) {
      if (!(sink instanceof DeviceEntries)) return value;
      sink.addProblem({ expected: 'a trace entry dict', found: machineTypeOf(value) });
      this.entries++;
      return CONSUMED;
    }
    const frame = this.stacks.frameIdOf(value.pairs, value.size);
    if (frame >= 0) {
      this.machine.replaceRef(value.memo, frame << 1);
      this.machine.release(value.pairs.length);
      return this.stacks.refs[frame];
    }
    const action = value.get('action');
    if (
      sink instanceof EndSegments ||
      (sink === null && action === undefined && value.get('total_size') !== undefined)
    ) {
      return this.segment(list, value);
    }
    if (action === undefined) {
      if (sink === null) return value;
      sink.addProblem({ expected: 'an `action` string', found: 'nothing' });
      this.entries++;
      return CONSUMED;
    }
    const entries = sink ?? this.deviceEntries(list);
    this.stack = this.stackOfFrames(value.get('frames'), KEEPS_STACK.has(action));
    entries.add(value, this.stackOfEntry);
    this.entries++;
    this.machine.forget(value.memo);
    this.machine.release(value.pairs.length);
    return CONSUMED;
  }

  /** The segment `value`, as `list` (the end state's segments) takes it: read, and dropped. */
  private segment(list: PList, value: PDict): typeof CONSUMED {
    const segments = (list.sink ??= new EndSegments()) as EndSegments;
    segments.segments.push(readSegment(value, this.stackOfBlock));
    const blocks = value.get('blocks');
    if (blocks instanceof PList) {
      this.machine.forget(blocks.memo);
      this.machine.release(blocks.length);
    }
    this.machine.forget(value.memo);
    this.machine.release(value.pairs.length);
    return CONSUMED;
  }

  /** New rows for `list`, a device's trace (its first entry has come). */
  private deviceEntries(list: PList): DeviceEntries {
    const entries = new DeviceEntries(`${this.name} (device_traces)`, this.maxEvents);
    list.sink = entries;
    return entries;
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
}
