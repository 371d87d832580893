/**
 * One snapshot dump as the watch uses it: the device's trace entries with their addresses (which
 * the lab's traces do not keep: they number blocks instead), the end state's segments and the
 * settings, and the part of the entries a later dump adds, as a snapshot of its own.
 *
 * ```
 *  SnapshotStream's records ─► the device with the most events ─► DumpEntries (columns: action,
 *  addr, size, stream, time_us; device_free of each oom entry)
 *  entries [from, end) + the dump's segments ─► a snapshot dict ─► parseTorchSnapshot ─► a chunk
 *  trace whose starting state is the pool as it was at entry `from`
 * ```
 *
 * The columns are the stream reader's own (read, never copied); this module is the one place that
 * knows their shape, and checks it. Browser-safe: no Node module.
 */
import { parseTorchSnapshot, type SnapshotRecords, type Trace } from '@allot/workloads';

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

/** Codes of {@link ENTRY_ACTIONS} by name. */
export const ACTION = Object.fromEntries(ENTRY_ACTIONS.map((name, code) => [name, code])) as {
  readonly [K in (typeof ENTRY_ACTIONS)[number]]: number;
};

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
}

/** A dump read: its entries on the device the watch follows, its end state and settings. */
export interface Dump {
  /** The device followed: the one whose trace has the most events. */
  readonly device: number;
  readonly entries: DumpEntries;
  /** The end state's `segments`, as plain values (every device's). */
  readonly segments: unknown;
  readonly allocatorSettings: unknown;
  /** The dump's trace on that device (its starting state rebuilt from the whole window). */
  readonly trace: Trace;
}

function isEntries(value: unknown): value is DumpEntries {
  const columns = value as Partial<DumpEntries> | null;
  return (
    typeof columns === 'object' &&
    columns !== null &&
    typeof columns.length === 'number' &&
    columns.action instanceof Uint8Array &&
    columns.addr instanceof Float64Array &&
    columns.size instanceof Float64Array &&
    columns.stream instanceof Float64Array &&
    columns.time instanceof Float64Array &&
    columns.deviceFree instanceof Map
  );
}

/**
 * The dump of `records` whose traces (`traces`, as `snapshotTraces` built them) are given: the
 * device with the most events. Throws a plain Error when the reader's columns are not what this
 * module expects (a bug, not the input).
 */
export function dumpOf(records: SnapshotRecords, traces: readonly Trace[]): Dump {
  const trace = traces.reduce((a, b) => (b.length > a.length ? b : a));
  const device = typeof trace.meta.device === 'number' ? trace.meta.device : 0;
  const columns = Array.isArray(records.devices) ? records.devices[device] : undefined;
  if (!isEntries(columns)) {
    throw new Error(`the snapshot reader's entries of device ${device} are not columns`);
  }
  return {
    device,
    entries: columns,
    segments: records.segments,
    allocatorSettings: records.allocatorSettings,
    trace,
  };
}

/** Whether entry `i` of `a` and entry `j` of `b` are the same record. */
export function sameEntry(a: DumpEntries, i: number, b: DumpEntries, j: number): boolean {
  return (
    a.action[i] === b.action[j] &&
    Object.is(a.addr[i], b.addr[j]) &&
    Object.is(a.size[i], b.size[j]) &&
    a.stream[i] === b.stream[j] &&
    Object.is(a.time[i], b.time[j]) &&
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
  const entries: Record<string, unknown>[] = [];
  for (let i = from; i < dump.entries.length; i++) entries.push(plainEntry(dump.entries, i));
  const device_traces: unknown[] = [];
  for (let d = 0; d < dump.device; d++) device_traces.push([]);
  device_traces.push(entries);
  const traces = parseTorchSnapshot(
    { segments: dump.segments, device_traces, allocator_settings: dump.allocatorSettings },
    { name },
  );
  return traces.find((trace) => trace.meta.device === dump.device) ?? null;
}
