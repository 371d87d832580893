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
 * shares it gets the ref. What stays is the columns, the distinct frames and stacks, and the end
 * state's segments. Browser-safe: no Node module.
 */
import { TraceFormatError } from '../errors';
import { DEFAULT_MAX_EVENTS } from '../trace';
import {
  CONSUMED,
  DEFAULT_MACHINE_LIMITS,
  type MachineLimits,
  machineTypeOf,
  PDict,
  PickleMachine,
  PList,
  plainValue,
} from './pickle-machine';
import { SnapshotColumns } from './snapshot-columns';
import { FrameRef, StackTable } from './stack-table';

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
 * The interned frame of `dict` when it is a stack frame `{filename, line, name}` (three keys, a
 * string filename), else undefined.
 */
function frameOf(dict: PDict, stacks: StackTable): FrameRef | undefined {
  const pairs = dict.pairs;
  if (pairs.length !== 6) return undefined;
  let filename: unknown;
  let line: unknown;
  let name: unknown;
  for (let i = 0; i < 6; i += 2) {
    const key = pairs[i];
    if (key === 'filename') filename = pairs[i + 1];
    else if (key === 'line') line = pairs[i + 1];
    else if (key === 'name') name = pairs[i + 1];
    else return undefined;
  }
  if (typeof filename !== 'string') return undefined;
  return stacks.frameRef(
    filename,
    typeof line === 'number' ? line : 0,
    typeof name === 'string' ? name : '?',
  );
}

function field(entry: unknown, key: string): unknown {
  return (entry as PDict).get(key);
}

/** Reads a snapshot pickle pushed in chunks. */
export class SnapshotStream {
  private readonly machine: PickleMachine;
  readonly stacks = new StackTable();
  private readonly name: string;
  private readonly maxEvents: number;
  /** Entries read so far, over every device. */
  entries = 0;

  constructor(options: SnapshotStreamOptions = {}) {
    this.name = options.name ?? 'snapshot';
    this.maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
    this.machine = new PickleMachine(
      this.name,
      { append: (list, value) => this.append(list, value), ref: (id) => this.stacks.refs[id] },
      { ...DEFAULT_MACHINE_LIMITS, ...options.limits },
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
          ? ((list.sink as SnapshotColumns | null) ?? [])
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
    if (!(value instanceof PDict)) {
      if (list.sink !== null) {
        (list.sink as SnapshotColumns).addProblem({
          expected: 'a trace entry dict',
          found: machineTypeOf(value),
        });
        this.entries++;
        return CONSUMED;
      }
      return value;
    }
    const ref = frameOf(value, this.stacks);
    if (ref !== undefined) {
      this.machine.replaceRef(value.memo, ref.id);
      this.machine.release(value.pairs.length);
      return ref;
    }
    if (value.get('action') === undefined) {
      if (list.sink === null) return value;
      (list.sink as SnapshotColumns).addProblem({
        expected: 'an `action` string',
        found: 'nothing',
      });
      this.entries++;
      return CONSUMED;
    }
    if (list.sink === null) {
      const device = `${this.name} (device_traces)`;
      list.sink = new SnapshotColumns(this.maxEvents, (n) => {
        throw new TraceFormatError(
          device,
          n,
          `at most ${this.maxEvents.toLocaleString('en-US')} events (the event limit)`,
          'more events',
          'event',
        );
      });
    }
    const columns = list.sink as SnapshotColumns;
    columns.add(value, field, machineTypeOf, this.stacks, framesOfList);
    this.entries++;
    const frames = value.get('frames');
    if (frames instanceof PList) {
      this.machine.forget(frames.memo);
      this.machine.release(frames.items.length);
    }
    this.machine.forget(value.memo);
    this.machine.release(value.pairs.length);
    return CONSUMED;
  }

  /** A machine value as plain values, frame refs as their frames (see {@link plainValue}). */
  private plain(value: unknown): unknown {
    return plainValue(value, {
      name: this.name,
      at: this.machine.bytesIn,
      maxVisits: this.machine.limits.maxItems,
      frame: (ref) => (ref instanceof FrameRef ? this.stacks.frames[ref.id] : undefined),
    });
  }
}

/** The frame refs of an entry's `frames` list. */
function framesOfList(frames: unknown): readonly unknown[] | null {
  return frames instanceof PList ? frames.items : null;
}
