/**
 * Reader of PyTorch memory snapshots: the dictionary `torch.cuda.memory._snapshot()` returns and
 * `torch.cuda.memory._dump_snapshot(path)` pickles (read the pickle with {@link unpickle}, or pass
 * the JSON form that memory_viz and `@allot/stats` also write).
 *
 * ```
 * { segments: [{ device, address, total_size, stream, blocks: [...] }],       state at the end
 *   device_traces: [[{ action, addr, size, stream, time_us }, ...], ...],    one list per device
 *   allocator_settings: { ... } }
 * ```
 *
 * Each device's trace becomes one {@link Trace}:
 * - `alloc` allocates at `addr`; the block is freed at its `free_completed` (the moment PyTorch can
 *   reuse it, after the streams that used it are done). A device trace without any
 *   `free_completed` (older PyTorch) frees at `free_requested`; a legacy `free` frees too.
 * - The trace is a ring buffer (`max_entries`): a free of a block allocated before it began is
 *   modelled as live from the start (see `PointerEvents`).
 * - `segment_alloc`/`segment_free` (and `segment_map`/`segment_unmap` of expandable segments) are
 *   PyTorch's own `cudaMalloc` decisions: they are not replayed but summed into the trace's `meta`
 *   (`torchSegmentAllocs`, `torchSegmentFrees`, `torchPeakReservedBytes`, `torchReservedAtEndBytes`,
 *   `torchOoms`), so a report can set PyTorch's reserved memory beside a replay's.
 * - Streams (`stream`, a `cudaStream_t` value) become dense ids, 0 for the first one seen.
 *
 * The recording began after the program had already allocated (a model's weights, an optimizer's
 * state), so each trace also carries its **starting state** ({@link Trace.start}), rebuilt from the
 * end state and the trace:
 * - segments at the start: those of the end state that no `segment_alloc` in the window created,
 *   plus those a `segment_free` in the window released without having created them; an expandable
 *   segment, with the bytes mapped at the end less those the window mapped (plus those it unmapped);
 * - blocks live at the start: those freed in the window without having been allocated in it, and
 *   those active at the end that the window never allocated (with their recorded block size).
 * When a block falls in no segment (a window that lost its start to the ring buffer, say), the
 * trace carries no starting state and `meta.startState` says why.
 */
import { typeOf, type UnpickledValue } from '@allot/pickle';
import { TraceFormatError } from '../errors';
import type { RecordedSegment, StartBlock, StartSegment, StartState, Trace } from '../trace';
import { PointerEvents, parseAddress } from './pointer-events';
import { Action, numberOf, SnapshotColumns } from './snapshot-columns';
import { oomsOf, reservedLine, type SegmentEvent } from './snapshot-figures';
import type { SnapshotRecords } from './snapshot-stream';
import { type FrameRef, StackRef, StackTable } from './stack-table';

/** Options of {@link parseTorchSnapshot}. */
export interface ParseTorchSnapshotOptions {
  /** Base name of the traces and label in error messages. @defaultValue 'snapshot' */
  readonly name?: string;
  /** Most events per device. @defaultValue DEFAULT_MAX_EVENTS (10 M) */
  readonly maxEvents?: number;
}

type Dict = { readonly [key: string]: unknown };

function isDict(value: unknown): value is Dict {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    !(value instanceof Uint8Array)
  );
}

function describe(value: unknown): string {
  return typeOf(value as UnpickledValue);
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
    return snapshotTraces(
      {
        segments: undefined,
        allocatorSettings: undefined,
        devices: undefined,
        notADict: snapshot,
        stacks,
      },
      options,
    );
  }
  const deviceTraces = snapshot.device_traces;
  const stackOf = (frames: unknown): number => plainStack(stacks, frames);
  const devices = Array.isArray(deviceTraces)
    ? deviceTraces.map((entries: unknown) => {
        if (!Array.isArray(entries)) return entries;
        const columns = new SnapshotColumns(Number.MAX_SAFE_INTEGER, () => {
          throw new Error('unreachable');
        });
        for (const entry of entries) {
          if (isDict(entry)) {
            columns.add(entry, (e, key) => (e as Dict)[key], describe, stackOf);
          } else {
            columns.addProblem({ expected: 'a trace entry dict', found: describe(entry) });
          }
        }
        return columns;
      })
    : deviceTraces;
  return snapshotTraces(
    {
      segments: snapshot.segments,
      allocatorSettings: snapshot.allocator_settings,
      devices,
      stacks,
    },
    options,
  );
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
    if (!isDict(frame) || typeof frame.filename !== 'string') continue;
    const line = numberOf(frame.line);
    refs.push(
      stacks.frameRef(
        frame.filename,
        Number.isFinite(line) ? line : 0,
        typeof frame.name === 'string' ? frame.name : '?',
      ),
    );
  }
  return stacks.stackOf(refs);
}

/**
 * The traces of a snapshot's records (see {@link SnapshotStream}), one per device that recorded
 * events.
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
  const deviceTraces = records.devices;
  if (!Array.isArray(deviceTraces)) {
    throw new TraceFormatError(
      name,
      1,
      'a `device_traces` list (record with torch.cuda.memory._record_memory_history())',
      deviceTraces === undefined ? 'no device_traces key' : describe(deviceTraces),
      'event',
    );
  }
  const reservedAtEnd = new Map<number, number>();
  if (Array.isArray(records.segments)) {
    for (const segment of records.segments) {
      if (!isDict(segment)) continue;
      const device = numberOf(segment.device);
      const size = numberOf(segment.total_size);
      if (Number.isFinite(device) && Number.isFinite(size)) {
        reservedAtEnd.set(device, (reservedAtEnd.get(device) ?? 0) + size);
      }
    }
  }
  const settings = isDict(records.allocatorSettings) ? records.allocatorSettings : undefined;
  const allocConf =
    settings && typeof settings.PYTORCH_CUDA_ALLOC_CONF === 'string'
      ? settings.PYTORCH_CUDA_ALLOC_CONF
      : undefined;

  const traces: Trace[] = [];
  deviceTraces.forEach((entries: unknown, device: number) => {
    const source = `${name} (device_traces[${device}])`;
    if (Array.isArray(entries) && entries.length === 0) return;
    if (!(entries instanceof SnapshotColumns)) {
      if (Array.isArray(entries)) {
        // A list the stream reader kept whole: its first item is no trace entry.
        const first = entries[0];
        throw new TraceFormatError(
          source,
          1,
          isDict(first) ? 'an `action` string' : 'a trace entry dict',
          isDict(first) ? describe(first.action) : describe(first),
          'event',
        );
      }
      throw new TraceFormatError(source, 1, 'a list of trace entries', describe(entries), 'event');
    }
    if (entries.length === 0) return;
    const trace = deviceTrace(entries, {
      source,
      name: deviceTraces.length > 1 ? `${name}#cuda:${device}` : name,
      snapshotName: name,
      device,
      maxEvents: options.maxEvents,
      segments: records.segments,
      reservedAtEnd: reservedAtEnd.get(device),
      allocConf,
      stacks: records.stacks,
    });
    if (trace !== null) traces.push(trace);
  });
  return traces;
}

interface DeviceContext {
  readonly source: string;
  readonly name: string;
  readonly snapshotName: string;
  readonly device: number;
  readonly maxEvents: number | undefined;
  readonly segments: unknown;
  readonly reservedAtEnd: number | undefined;
  readonly allocConf: string | undefined;
  readonly stacks: StackTable;
}

/** One device's trace from its entries, or null when it has no pointer event. */
function deviceTrace(columns: SnapshotColumns, context: DeviceContext): Trace | null {
  const { source } = context;
  const freeAction = columns.hasFreeCompleted ? Action.free_completed : Action.free_requested;
  // Room for every entry that may be a pointer event, at once.
  let pointerEntries = 0;
  for (let index = 0; index < columns.length; index++) {
    const action = columns.action[index]!;
    if (action === Action.alloc || action === freeAction || action === Action.free)
      pointerEntries++;
  }
  const events = new PointerEvents(source, 'event', context.maxEvents, pointerEntries);
  let segmentAllocs = 0;
  let segmentFrees = 0;
  let segmentDelta = 0;
  let minDelta = 0;
  let maxDelta = 0;
  let ooms = 0;
  let firstTime = Number.NaN;
  let lastTime = Number.NaN;
  const segmentEvents: SegmentEvent[] = [];
  /** Each `oom` entry: its index, the pointer events before it, the segment growth before it. */
  const oomAt: { entry: number; before: number; delta: number }[] = [];
  const { action: actions, addr: addrs, size: sizes, time: times, problems } = columns;
  for (let index = 0; index < columns.length; index++) {
    const at = index + 1;
    const action = actions[index]!;
    if (action === Action.INVALID) {
      const problem = problems.get(index)!;
      throw new TraceFormatError(source, at, problem.expected, problem.found, 'event');
    }
    const time = times[index]!;
    if (Number.isFinite(time)) {
      if (Number.isNaN(firstTime)) firstTime = time;
      lastTime = time;
    }
    if (action === Action.oom || action === Action.snapshot) {
      if (action === Action.oom) {
        ooms++;
        oomAt.push({ entry: index, before: events.length, delta: segmentDelta });
      }
      continue;
    }
    const problem = problems.get(index);
    if (problem !== undefined) {
      throw new TraceFormatError(source, at, problem.expected, problem.found, 'event');
    }
    const size = sizes[index]!;
    if (action >= Action.segment_alloc) {
      const grow = action === Action.segment_alloc || action === Action.segment_map;
      const unmap = action === Action.segment_unmap;
      segmentEvents.push({
        grow,
        unmap,
        address: addrs[index]!,
        size,
        at: events.length,
        delta: segmentDelta,
      });
      if (grow) {
        segmentAllocs++;
        segmentDelta += size;
      } else {
        segmentFrees++;
        segmentDelta -= size;
      }
      if (segmentDelta < minDelta) minDelta = segmentDelta;
      if (segmentDelta > maxDelta) maxDelta = segmentDelta;
      continue;
    }
    const isAlloc = action === Action.alloc;
    if (!isAlloc && action !== freeAction && action !== Action.free) continue;
    const address = addrs[index]!;
    const addrProblem = columns.addrProblems.get(index);
    if (addrProblem !== undefined) {
      throw new TraceFormatError(source, at, addrProblem.expected, addrProblem.found, 'event');
    }
    const stream = events.streamId(columns.stream[index]!);
    if (isAlloc) {
      if (size === 0) continue;
      events.alloc(address, size, stream, at);
      events.stamp(time, columns.stack[index]!);
    } else {
      if (size === 0 && !events.isLive(address)) continue;
      events.free(address, size, stream, at);
      events.stamp(time);
    }
  }
  if (events.length === 0) return null;
  const endSegments = readSegments(context.segments, context.device, context.stacks);
  const start = startState(events, endSegments, segmentEvents);
  // Reserved bytes when the window began: what the segments list holds at the end minus the
  // growth inside the window; without a segments list, the least that keeps the sum non-negative.
  const atEnd = context.reservedAtEnd;
  const atStart = atEnd !== undefined ? Math.max(0, atEnd - segmentDelta) : -minDelta;
  const trace = events.build(
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
      torchOoms: ooms,
      ...(Number.isFinite(firstTime) ? { durationUs: lastTime - firstTime } : {}),
      ...(context.allocConf !== undefined ? { torchAllocConf: context.allocConf } : {}),
      startState: typeof start === 'string' ? start : start.fidelity,
    },
    context.stacks,
  );
  const leading = events.preexistingBlocks().length;
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
  const recordedOoms = oomsOf(columns, oomAt, trace, leading, atStart, context.stacks, (stream) =>
    events.knownStreamId(stream),
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

/** A segment of the snapshot's end state. */
interface EndSegment {
  readonly address: number;
  readonly size: number;
  readonly pool: 'small' | 'large';
  readonly stream: number;
  readonly expandable: boolean;
  readonly blocks: readonly {
    address: number;
    size: number;
    requested: number;
    active: boolean;
    /** The block's stack (its allocation's), 0 for none. */
    stack: number;
  }[];
}

/** PyTorch's small-pool segment size (`kSmallBuffer`): a 2 MiB segment holds small blocks. */
const SMALL_SEGMENT = 2 ** 21;

/** The end state's segments of `device` (those with malformed fields left out). */
function readSegments(segments: unknown, device: number, stacks: StackTable): EndSegment[] {
  if (!Array.isArray(segments)) return [];
  const out: EndSegment[] = [];
  for (const segment of segments) {
    if (!isDict(segment) || numberOf(segment.device) !== device) continue;
    const address = parseAddress(segment.address);
    const size = numberOf(segment.total_size);
    if (Number.isNaN(address) || !Number.isSafeInteger(size) || size <= 0) continue;
    const blocks: EndSegment['blocks'][number][] = [];
    if (Array.isArray(segment.blocks)) {
      for (const block of segment.blocks) {
        if (!isDict(block)) continue;
        const blockAddress = parseAddress(block.address);
        const blockSize = numberOf(block.size);
        if (Number.isNaN(blockAddress) || !Number.isSafeInteger(blockSize)) continue;
        const requested = numberOf(block.requested_size);
        blocks.push({
          address: blockAddress,
          size: blockSize,
          requested: Number.isSafeInteger(requested) && requested > 0 ? requested : blockSize,
          active: typeof block.state === 'string' && block.state.startsWith('active'),
          stack: plainStack(stacks, block.frames),
        });
      }
    }
    out.push({
      address,
      size,
      pool:
        segment.segment_type === 'small' || segment.segment_type === 'large'
          ? segment.segment_type
          : size === SMALL_SEGMENT
            ? 'small'
            : 'large',
      stream: numberOf(segment.stream) || 0,
      expandable: segment.is_expandable === true,
      blocks,
    });
  }
  return out.sort((a, b) => a.address - b.address);
}

/**
 * The starting state (see the module comment), or the reason there is none. Registers the blocks
 * live throughout the window with `events`, so they get leading allocations.
 */
function startState(
  events: PointerEvents,
  endSegments: readonly EndSegment[],
  segmentEvents: readonly SegmentEvent[],
): StartState | string {
  const exactSize = new Map<number, number>();
  for (const segment of endSegments) {
    for (const block of segment.blocks) {
      if (block.active && !events.isLive(block.address)) {
        events.liveThroughout(
          block.address,
          block.requested,
          events.streamId(segment.stream),
          block.stack,
        );
        exactSize.set(block.address, block.size);
      }
    }
  }
  events.orderPreexistingByAddress();
  if (endSegments.length === 0) return 'no segments in the snapshot';
  const created = new Set<number>();
  const released: SegmentEvent[] = [];
  for (const event of segmentEvents) {
    if (event.grow) created.add(event.address);
    else if (!created.has(event.address)) released.push(event);
  }
  // Bytes the window mapped into each expandable segment (net of unmaps), by segment.
  const mapped = new Map<EndSegment, number>();
  for (const event of segmentEvents) {
    const owner = containing(endSegments, event.address, Number.POSITIVE_INFINITY);
    if (owner === undefined || !owner.expandable) continue;
    mapped.set(owner, (mapped.get(owner) ?? 0) + (event.grow ? event.size : -event.size));
  }
  const segments: (Omit<StartSegment, 'blocks'> & { blocks: StartBlock[] })[] = [];
  for (const segment of endSegments) {
    const size = segment.expandable
      ? segment.size - (mapped.get(segment) ?? 0)
      : created.has(segment.address)
        ? 0
        : segment.size;
    if (size <= 0) continue;
    segments.push({ ...segment, stream: events.streamId(segment.stream), size, blocks: [] });
  }
  for (const event of released) {
    segments.push({
      address: event.address,
      size: event.size,
      pool: event.size === SMALL_SEGMENT ? 'small' : 'large',
      stream: 0,
      expandable: false,
      blocks: [],
    });
  }
  segments.sort((a, b) => a.address - b.address);
  const blocks = events.preexistingBlocks();
  for (let id = 0; id < blocks.length; id++) {
    const block = blocks[id]!;
    const segment = containing(segments, block.address, 0);
    if (segment === undefined || block.address + block.size > segment.address + segment.size) {
      return `block 0x${block.address.toString(16)} live at the start lies in no segment`;
    }
    const size = exactSize.get(block.address);
    segment.blocks.push({
      id,
      offset: block.address - segment.address,
      requested: block.size,
      ...(size !== undefined ? { size } : {}),
    });
  }
  for (const segment of segments) {
    segment.blocks.sort((a, b) => a.offset - b.offset);
    let end = 0;
    for (const block of segment.blocks) {
      if (block.offset < end || block.offset % 512 !== 0) {
        return `blocks live at the start overlap in segment 0x${segment.address.toString(16)}`;
      }
      end = block.offset + (block.size ?? block.requested);
    }
  }
  return { events: blocks.length, segments, fidelity: 'exact' };
}

/**
 * The segment of `sorted` (by address) whose range holds `address`, its size extended by `slack`
 * (expandable segments map past their size at the end), or undefined.
 */
function containing<T extends { address: number; size: number }>(
  sorted: readonly T[],
  address: number,
  slack: number,
): T | undefined {
  let lo = 0;
  let hi = sorted.length - 1;
  let found: T | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]!.address <= address) {
      found = sorted[mid];
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (found === undefined || address >= found.address + found.size + slack) return undefined;
  return found;
}
