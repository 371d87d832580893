/**
 * One snapshot dump as the watch uses it: the device's trace entries with their addresses (which
 * the lab's traces do not keep: they number blocks instead), the end state's segments and the
 * settings, and the part of the entries a later dump adds, as a snapshot of its own.
 *
 * ```
 *  SnapshotReader's records ─► each device's rows, copied before snapshotTraces settles them ─►
 *  the device with the most events ─► DumpEntries (columns: action, addr, size, stream, time_us,
 *  stack; device_free of each oom entry)
 *  entries [from, end) + the dump's segments ─► DeviceEntries of their own ─► snapshotTraces ─► a
 *  chunk trace whose starting state is the pool as it was at entry `from`
 * ```
 *
 * Browser-safe: no Node module.
 */
import {
  DEFAULT_MAX_SNAPSHOT_EVENTS,
  DeviceEntries,
  type EndSegment,
  EntryAction,
  type SnapshotRecords,
  type StackTable,
  snapshotTraces,
  type Trace,
} from '@allot/workloads';

/** Entry actions, indexed by the code the reader's columns hold (255: a malformed entry). */
export const ENTRY_ACTIONS = [
  'alloc',
  'free_requested',
  'free_completed',
  'free',
  'segment_alloc',
  'segment_free',
  'segment_map',
  'segment_unmap',
  'oom',
  'snapshot',
] as const;

/** Codes of {@link ENTRY_ACTIONS} by name: the reader's own (`EntryAction`). */
export const ACTION: { readonly [K in (typeof ENTRY_ACTIONS)[number]]: number } = EntryAction;

/** One device's trace entries, as columns. */
export interface DumpEntries {
  readonly length: number;
  /** An {@link ENTRY_ACTIONS} code per entry. */
  readonly action: Uint8Array;
  /** Device addresses (NaN where absent). */
  readonly addr: Float64Array;
  readonly size: Float64Array;
  /** The `cudaStream_t` as recorded. */
  readonly stream: Float64Array;
  /** `time_us`, NaN where absent. */
  readonly time: Float64Array;
  /** `device_free` of each `oom` entry, by index. */
  readonly deviceFree: ReadonlyMap<number, number>;
  /** Each entry's stack in the dump's stack table (0 for none); null when none has one. */
  readonly stack?: Int32Array | null;
  /** Whether any entry is a `free_completed` (else frees happen at `free_requested`). */
  readonly hasFreeCompleted?: boolean;
}

/** A dump read: its entries on the device the watch follows, its end state and settings. */
export interface Dump {
  /** The device followed: the one whose trace has the most events. */
  readonly device: number;
  readonly entries: DumpEntries;
  /** The end state's `segments` (every device's). */
  readonly segments: readonly EndSegment[];
  /** The recorded `PYTORCH_CUDA_ALLOC_CONF`, when the dump states one. */
  readonly allocConf: string | undefined;
  /** The frames and stacks the entries' and blocks' stacks refer to. */
  readonly stacks: StackTable;
  /** The dump's trace on that device (its starting state rebuilt from the whole window). */
  readonly trace: Trace;
}

/**
 * The entries of `device` as columns of their own: read them before `snapshotTraces`, which settles
 * the rows in place.
 */
export function entriesOf(device: DeviceEntries): DumpEntries {
  const { rows, length } = device;
  return {
    length,
    action: rows.op.slice(0, length),
    addr: rows.address.slice(0, length),
    size: rows.size.slice(0, length),
    stream: rows.stream.slice(0, length),
    time: rows.time?.slice(0, length) ?? new Float64Array(length).fill(Number.NaN),
    deviceFree: new Map(device.deviceFree),
    stack: rows.stack?.slice(0, length) ?? null,
    hasFreeCompleted: device.hasFreeCompleted,
  };
}

/**
 * The dump of `records`, whose traces `traces` are (as `snapshotTraces` built them) and whose
 * devices' entries `columns` are (as {@link entriesOf} copied them first): the device with the
 * most events.
 */
export function dumpOf(
  records: SnapshotRecords,
  traces: readonly Trace[],
  columns: readonly (DumpEntries | undefined)[],
): Dump {
  const trace = traces.reduce((a, b) => (b.length > a.length ? b : a));
  const device = typeof trace.meta.device === 'number' ? trace.meta.device : 0;
  const entries = columns[device];
  if (entries === undefined) throw new Error(`device ${device} has a trace but no entries`);
  return {
    device,
    entries,
    segments: records.segments,
    allocConf: records.allocConf,
    stacks: records.stacks,
    trace,
  };
}

/**
 * Whether entry `i` of `a` and entry `j` of `b` record the same thing: all but `time_us`, which
 * PyTorch converts again at each snapshot (see `joinPoint`).
 */
export function sameRecord(a: DumpEntries, i: number, b: DumpEntries, j: number): boolean {
  return (
    a.action[i] === b.action[j] &&
    Object.is(a.addr[i], b.addr[j]) &&
    Object.is(a.size[i], b.size[j]) &&
    a.stream[i] === b.stream[j] &&
    Object.is(a.deviceFree.get(i), b.deviceFree.get(j))
  );
}

/** Entry `i` as the plain dict `torch.cuda.memory._snapshot()` gives. */
export function plainEntry(entries: DumpEntries, i: number): Record<string, unknown> {
  const action = ENTRY_ACTIONS[entries.action[i]!] ?? 'invalid';
  const entry: Record<string, unknown> = { action };
  if (action === 'oom') entry.device_free = entries.deviceFree.get(i);
  else entry.addr = entries.addr[i];
  entry.size = entries.size[i];
  entry.stream = entries.stream[i];
  const time = entries.time[i]!;
  if (!Number.isNaN(time)) entry.time_us = time;
  return entry;
}

/**
 * The trace of `dump`'s entries from `from` to its end: its starting state is the pool as it was
 * just before entry `from`, rebuilt from the dump's end state and those entries alone. Null when
 * they hold no allocation or free.
 */
export function chunkTrace(dump: Dump, from: number, name: string): Trace | null {
  const { entries } = dump;
  const chunk = new DeviceEntries(name, DEFAULT_MAX_SNAPSHOT_EVENTS);
  chunk.hasFreeCompleted = entries.hasFreeCompleted ?? false;
  for (let i = from; i < entries.length; i++) {
    const at = chunk.rows.add(
      entries.action[i]!,
      entries.addr[i]!,
      entries.size[i]!,
      entries.stream[i]!,
      i - from + 1,
      entries.time[i]!,
      entries.stack?.[i] ?? 0,
    );
    const free = entries.deviceFree.get(i);
    if (free !== undefined) chunk.deviceFree.set(at, free);
  }
  const devices: (DeviceEntries | never[])[] = [];
  for (let d = 0; d < dump.device; d++) devices.push([]);
  devices.push(chunk);
  const traces = snapshotTraces(
    { devices, segments: dump.segments, allocConf: dump.allocConf, stacks: dump.stacks },
    { name, maxEvents: DEFAULT_MAX_SNAPSHOT_EVENTS },
  );
  return traces.find((trace) => trace.meta.device === dump.device) ?? null;
}
