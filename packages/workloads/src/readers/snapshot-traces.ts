/**
 * The traces of a PyTorch memory snapshot: the dictionary `torch.cuda.memory._snapshot()` returns
 * and `torch.cuda.memory._dump_snapshot(path)` pickles (read as a stream by `snapshot-reader.ts`),
 * or its JSON form (memory_viz and `@allot/stats` write it).
 *
 * ```
 * { segments: [{ device, address, total_size, stream, blocks: [...] }],       state at the end
 *   device_traces: [[{ action, addr, size, stream, time_us }, ...], ...],    one list per device
 *   allocator_settings: { ... } }
 * ```
 *
 * Each device's trace becomes one {@link Trace}, its entries' rows settled into its columns:
 * - `alloc` allocates at `addr`; the block is freed at its `free_completed` (the moment PyTorch can
 *   reuse it, after the streams that used it are done). A device trace without any
 *   `free_completed` (older PyTorch) frees at `free_requested`; a legacy `free` frees too.
 * - The trace is a ring buffer (`max_entries`): a free of a block allocated before it began is
 *   modelled as live from the start (see `pointer-trace.ts`).
 * - `segment_alloc`/`segment_free` (and `segment_map`/`segment_unmap` of expandable segments) are
 *   PyTorch's own `cudaMalloc` decisions: they are not replayed but summed into the trace's `meta`
 *   (`torchSegmentAllocs`, `torchSegmentFrees`, `torchPeakReservedBytes`, `torchReservedAtEndBytes`,
 *   `torchOoms`), so a report can set PyTorch's reserved memory beside a replay's.
 * - Streams (`stream`, a `cudaStream_t` value) become dense ids, 0 for the first one seen.
 *
 * The recording began after the program had already allocated (a model's weights, an optimizer's
 * state), so each trace also carries its **starting state** ({@link Trace.start}), rebuilt from the
 * end state and the trace (see `end-state.ts`).
 */
import { TraceFormatError } from '../errors';
import { DEFAULT_MAX_EVENTS, type RecordedSegment, type Trace } from '../trace';
import { Action, DeviceEntries } from './device-entries';
import { deviceSegments, type EndSegment, readSegment, startState } from './end-state';
import { describe, fieldOf, isDict, itemsOf, numberOf } from './recorded-values';
import { type OomEntry, oomsOf, reservedLine, type SegmentEvent } from './snapshot-figures';
import { type FrameRef, StackRef, StackTable } from './stack-table';

/** Options of {@link parseTorchSnapshot}. */
export interface ParseTorchSnapshotOptions {
  /** Base name of the traces and label in error messages. @defaultValue 'snapshot' */
  readonly name?: string;
  /** Most events per device. @defaultValue DEFAULT_MAX_EVENTS (2 M) */
  readonly maxEvents?: number;
}

/** What a snapshot holds, as its traces are built from it. */
export interface SnapshotRecords {
  /**
   * `device_traces`: per device, its entries, or the value found when it is no list of entries
   * (for the error); undefined when the snapshot has none, another value when it is no list.
   */
  readonly devices: unknown;
  /** The end state's segments, every device's. */
  readonly segments: readonly EndSegment[];
  /** `allocator_settings.PYTORCH_CUDA_ALLOC_CONF`, when recorded. */
  readonly allocConf: string | undefined;
  /** The snapshot itself when it is no dict (for the error). */
  readonly notADict?: unknown;
  /** The interned frames and stacks of the entries and blocks. */
  readonly stacks: StackTable;
}

/** `allocator_settings.PYTORCH_CUDA_ALLOC_CONF` of a snapshot's settings, when a string. */
export function allocConfOf(settings: unknown): string | undefined {
  const conf = isDict(settings) ? fieldOf(settings, 'PYTORCH_CUDA_ALLOC_CONF') : undefined;
  return typeof conf === 'string' ? conf : undefined;
}

/**
 * The traces of a snapshot given as plain values (its JSON form, say), one per device that recorded
 * events (devices with an empty trace are left out).
 *
 * @throws TraceFormatError (with the device and the 1-based event number) when the snapshot's shape
 * or an entry is malformed.
 */
export function parseTorchSnapshot(
  snapshot: unknown,
  options: ParseTorchSnapshotOptions = {},
): Trace[] {
  const stacks = new StackTable();
  if (!isDict(snapshot)) {
    const records = { devices: undefined, segments: [], allocConf: undefined, stacks };
    return snapshotTraces({ ...records, notADict: snapshot }, options);
  }
  const stackOf = (frames: unknown): number => plainStack(stacks, frames);
  const deviceTraces = fieldOf(snapshot, 'device_traces');
  const devices = Array.isArray(deviceTraces)
    ? deviceTraces.map((entries: unknown) => {
        if (!Array.isArray(entries)) return entries;
        const device = new DeviceEntries(
          `${options.name ?? 'snapshot'} (device_traces)`,
          options.maxEvents ?? DEFAULT_MAX_EVENTS,
        );
        for (const entry of entries) {
          if (isDict(entry)) device.add(entry, stackOf);
          else device.addProblem({ expected: 'a trace entry dict', found: describe(entry) });
        }
        return device;
      })
    : deviceTraces;
  const segments: EndSegment[] = [];
  for (const segment of itemsOf(fieldOf(snapshot, 'segments')) ?? []) {
    if (isDict(segment)) segments.push(readSegment(segment, stackOf));
  }
  const allocConf = allocConfOf(fieldOf(snapshot, 'allocator_settings'));
  return snapshotTraces({ devices, segments, allocConf, stacks }, options);
}

/**
 * The stack of `frames`, plain `{filename, line, name}` dicts innermost first, or the ref of a stack
 * interned already (0 for none).
 */
function plainStack(stacks: StackTable, frames: unknown): number {
  if (frames instanceof StackRef) return frames.id;
  if (!Array.isArray(frames)) return 0;
  const refs: FrameRef[] = [];
  for (const frame of frames) {
    if (!isDict(frame)) continue;
    const filename = fieldOf(frame, 'filename');
    if (typeof filename !== 'string') continue;
    const line = numberOf(fieldOf(frame, 'line'));
    const name = fieldOf(frame, 'name');
    refs.push(
      stacks.frameRef(
        filename,
        Number.isFinite(line) ? line : 0,
        typeof name === 'string' ? name : '?',
      ),
    );
  }
  return stacks.stackOf(refs);
}

/**
 * The traces of a snapshot's records, one per device that recorded events.
 *
 * @throws TraceFormatError (with the device and the 1-based event number) when the snapshot's shape
 * or an entry is malformed.
 */
export function snapshotTraces(
  records: SnapshotRecords,
  options: ParseTorchSnapshotOptions = {},
): Trace[] {
  const name = options.name ?? 'snapshot';
  if ('notADict' in records) {
    throw new TraceFormatError(
      name,
      1,
      'a snapshot dict with `device_traces` (torch.cuda.memory._snapshot())',
      describe(records.notADict),
      'event',
    );
  }
  const deviceTraces = itemsOf(records.devices);
  if (deviceTraces === null) {
    throw new TraceFormatError(
      name,
      1,
      'a `device_traces` list (record with torch.cuda.memory._record_memory_history())',
      records.devices === undefined ? 'no device_traces key' : describe(records.devices),
      'event',
    );
  }
  const reservedAtEnd = new Map<number, number>();
  for (const segment of records.segments) {
    if (Number.isFinite(segment.device) && Number.isFinite(segment.size)) {
      reservedAtEnd.set(segment.device, (reservedAtEnd.get(segment.device) ?? 0) + segment.size);
    }
  }
  const traces: Trace[] = [];
  const read = new Map<DeviceEntries, number>();
  deviceTraces.forEach((entries: unknown, device: number) => {
    const source = `${name} (device_traces[${device}])`;
    const list = itemsOf(entries);
    if (list !== null && list.length === 0) return;
    if (!(entries instanceof DeviceEntries)) {
      if (list !== null) {
        // A list the stream reader kept whole: its first item is no trace entry.
        const first = list[0];
        throw new TraceFormatError(
          source,
          1,
          isDict(first) ? 'an `action` string' : 'a trace entry dict',
          isDict(first) ? describe(fieldOf(first, 'action')) : describe(first),
          'event',
        );
      }
      throw new TraceFormatError(source, 1, 'a list of trace entries', describe(entries), 'event');
    }
    if (entries.length === 0) return;
    // PyTorch makes a list per device: one list twice is a pickle's doing (its memo).
    const first = read.get(entries);
    if (first !== undefined) {
      throw new TraceFormatError(
        source,
        1,
        'a list of trace entries of its own (PyTorch writes one per device)',
        `the list of device_traces[${first}] again`,
        'event',
      );
    }
    read.set(entries, device);
    entries.rows.source = source;
    const trace = deviceTrace(entries, {
      name: deviceTraces.length > 1 ? `${name}#cuda:${device}` : name,
      snapshotName: name,
      device,
      segments: deviceSegments(records.segments, device),
      reservedAtEnd: reservedAtEnd.get(device),
      allocConf: records.allocConf,
      stacks: records.stacks,
    });
    if (trace !== null) traces.push(trace);
  });
  return traces;
}

interface DeviceContext {
  readonly name: string;
  readonly snapshotName: string;
  readonly device: number;
  readonly segments: readonly EndSegment[];
  readonly reservedAtEnd: number | undefined;
  readonly allocConf: string | undefined;
  readonly stacks: StackTable;
}

/** One device's trace from its entries, or null when it has no pointer event. */
function deviceTrace(entries: DeviceEntries, context: DeviceContext): Trace | null {
  const { rows } = entries;
  const freeAction = entries.hasFreeCompleted ? Action.free_completed : Action.free_requested;
  let segmentAllocs = 0;
  let segmentFrees = 0;
  let segmentDelta = 0;
  let minDelta = 0;
  let maxDelta = 0;
  const segmentEvents: SegmentEvent[] = [];
  const ooms: OomEntry[] = [];
  const duration = durationOf(rows.time, rows.length);
  rows.settle({
    freeOp: freeAction,
    dropEmptyFrees: true,
    badAddress: (row) => {
      const problem = entries.addressProblems.get(row);
      return problem === undefined ? ['an address', 'none'] : [problem.expected, problem.found];
    },
    mark: (row, events) => {
      const action = rows.op[row]!;
      if (action === Action.INVALID) {
        const problem = entries.problems.get(row)!;
        throw new TraceFormatError(rows.source, row + 1, problem.expected, problem.found, 'event');
      }
      if (action === Action.oom) {
        ooms.push({
          entry: row,
          before: events,
          delta: segmentDelta,
          size: rows.size[row]!,
          stream: rows.stream[row]!,
          time: rows.time?.[row] ?? Number.NaN,
          stack: rows.stack?.[row] ?? 0,
          deviceFree: entries.deviceFree.get(row) ?? Number.NaN,
        });
      }
      if (action === Action.oom || action === Action.snapshot) return;
      const size = rows.size[row]!;
      const grow = action === Action.segment_alloc || action === Action.segment_map;
      const unmap = action === Action.segment_unmap;
      const address = rows.address[row]!;
      segmentEvents.push({ grow, unmap, address, size, at: events, delta: segmentDelta });
      if (grow) {
        segmentAllocs++;
        segmentDelta += size;
      } else {
        segmentFrees++;
        segmentDelta -= size;
      }
      if (segmentDelta < minDelta) minDelta = segmentDelta;
      if (segmentDelta > maxDelta) maxDelta = segmentDelta;
    },
  });
  if (rows.eventCount === 0) return null;
  const start = startState(rows, context.segments, segmentEvents);
  // Reserved bytes when the window began: what the segments list holds at the end minus the
  // growth inside the window; without a segments list, the least that keeps the sum non-negative.
  const atEnd = context.reservedAtEnd;
  const atStart = atEnd !== undefined ? Math.max(0, atEnd - segmentDelta) : -minDelta;
  const trace = rows.finish(
    context.name,
    {
      format: 'torch-snapshot',
      source: context.snapshotName,
      device: context.device,
      freeAction: freeAction === Action.free_completed ? 'free_completed' : 'free_requested',
      torchSegmentAllocs: segmentAllocs,
      torchSegmentFrees: segmentFrees,
      torchReservedAtStartBytes: atStart,
      torchPeakReservedBytes: atStart + maxDelta,
      torchReservedAtEndBytes: atEnd ?? atStart + segmentDelta,
      torchOoms: ooms.length,
      ...(duration !== null ? { durationUs: duration } : {}),
      ...(context.allocConf !== undefined ? { torchAllocConf: context.allocConf } : {}),
      startState: typeof start === 'string' ? start : start.fidelity,
    },
    context.stacks,
  );
  const leading = rows.preexistingBlocks().length;
  const recordedSegments: RecordedSegment[] = segmentEvents
    .filter((event) => event.grow || event.unmap)
    .map((event) => ({
      event: leading + event.at,
      size: event.grow ? event.size : -event.size,
      address: event.address,
    }));
  const frees = segmentEvents.filter((event) => !event.grow && !event.unmap);
  const releases =
    frees.length > 0
      ? {
          event: Int32Array.from(frees, (event) => leading + event.at),
          bytes: Float64Array.from(frees, (event) => event.size),
          reservedBefore: Float64Array.from(frees, (event) => atStart + event.delta),
        }
      : undefined;
  const recordedOoms = oomsOf(ooms, trace, leading, atStart, context.stacks, (stream) =>
    rows.knownStreamId(stream),
  );
  return {
    ...trace,
    ...(typeof start === 'string' ? {} : { start }),
    recordedSegments,
    ...(releases !== undefined ? { releases } : {}),
    recordedReserved: reservedLine(trace.length, leading, atStart, segmentEvents),
    ...(recordedOoms.length > 0 ? { recordedOoms } : {}),
  };
}

/** µs from the first to the last entry recorded with a time, or null when none was. */
function durationOf(time: Float64Array | null, length: number): number | null {
  if (time === null) return null;
  let first = Number.NaN;
  let last = Number.NaN;
  for (let i = 0; i < length; i++) {
    const t = time[i]!;
    if (!Number.isFinite(t)) continue;
    if (Number.isNaN(first)) first = t;
    last = t;
  }
  return Number.isNaN(first) ? null : last - first;
}
