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
 */
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import { typeOf, type UnpickledValue } from './pickle';
import { PointerEvents, parseAddress } from './pointer-events';

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

function numberOf(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  return Number.NaN;
}

const FREE_ACTIONS = new Set(['free_requested', 'free_completed', 'free']);
const SEGMENT_GROW = new Set(['segment_alloc', 'segment_map']);
const SEGMENT_SHRINK = new Set(['segment_free', 'segment_unmap']);
const OTHER_ACTIONS = new Set(['oom', 'snapshot']);

/**
 * The traces of a snapshot, one per device that recorded events (devices with an empty trace are
 * left out).
 *
 * @throws TraceFormatError (with the device and the 1-based event number) when the snapshot's shape
 * or an entry is malformed.
 */
export function parseTorchSnapshot(
  snapshot: unknown,
  options: ParseTorchSnapshotOptions = {},
): Trace[] {
  const name = options.name ?? 'snapshot';
  if (!isDict(snapshot)) {
    throw new TraceFormatError(
      name,
      1,
      'a snapshot dict with `device_traces` (torch.cuda.memory._snapshot())',
      typeOf(snapshot as UnpickledValue),
      'event',
    );
  }
  const deviceTraces = snapshot.device_traces;
  if (!Array.isArray(deviceTraces)) {
    throw new TraceFormatError(
      name,
      1,
      'a `device_traces` list (record with torch.cuda.memory._record_memory_history())',
      deviceTraces === undefined ? 'no device_traces key' : typeOf(deviceTraces as UnpickledValue),
      'event',
    );
  }
  const reservedAtEnd = new Map<number, number>();
  if (Array.isArray(snapshot.segments)) {
    for (const segment of snapshot.segments) {
      if (!isDict(segment)) continue;
      const device = numberOf(segment.device);
      const size = numberOf(segment.total_size);
      if (Number.isFinite(device) && Number.isFinite(size)) {
        reservedAtEnd.set(device, (reservedAtEnd.get(device) ?? 0) + size);
      }
    }
  }
  const settings = isDict(snapshot.allocator_settings) ? snapshot.allocator_settings : undefined;
  const allocConf =
    settings && typeof settings.PYTORCH_CUDA_ALLOC_CONF === 'string'
      ? settings.PYTORCH_CUDA_ALLOC_CONF
      : undefined;

  const traces: Trace[] = [];
  deviceTraces.forEach((entries: unknown, device: number) => {
    const source = `${name} (device_traces[${device}])`;
    if (!Array.isArray(entries)) {
      throw new TraceFormatError(
        source,
        1,
        'a list of trace entries',
        typeOf(entries as UnpickledValue),
        'event',
      );
    }
    if (entries.length === 0) return;
    const freeAction = entries.some((entry) => isDict(entry) && entry.action === 'free_completed')
      ? 'free_completed'
      : 'free_requested';
    const events = new PointerEvents(source, 'event', options.maxEvents);
    let segmentAllocs = 0;
    let segmentFrees = 0;
    let segmentDelta = 0;
    let minDelta = 0;
    let maxDelta = 0;
    let ooms = 0;
    let firstTime = Number.NaN;
    let lastTime = Number.NaN;
    entries.forEach((entry: unknown, index: number) => {
      const at = index + 1;
      if (!isDict(entry)) {
        throw new TraceFormatError(
          source,
          at,
          'a trace entry dict',
          typeOf(entry as UnpickledValue),
          'event',
        );
      }
      const action = entry.action;
      if (typeof action !== 'string') {
        throw new TraceFormatError(
          source,
          at,
          'an `action` string',
          typeOf(action as UnpickledValue),
          'event',
        );
      }
      const time = numberOf(entry.time_us);
      if (Number.isFinite(time)) {
        if (Number.isNaN(firstTime)) firstTime = time;
        lastTime = time;
      }
      if (OTHER_ACTIONS.has(action)) {
        if (action === 'oom') ooms++;
        return;
      }
      const isAlloc = action === 'alloc';
      const isFree = FREE_ACTIONS.has(action);
      const isSegment = SEGMENT_GROW.has(action) || SEGMENT_SHRINK.has(action);
      if (!isAlloc && !isFree && !isSegment) {
        throw new TraceFormatError(
          source,
          at,
          'an action among alloc, free_requested, free_completed, segment_alloc, segment_free, ' +
            'segment_map, segment_unmap, oom, snapshot',
          JSON.stringify(action),
          'event',
        );
      }
      const size = numberOf(entry.size);
      if (!Number.isSafeInteger(size) || size < 0) {
        throw new TraceFormatError(
          source,
          at,
          `a non-negative integer \`size\` for ${action}`,
          typeOf(entry.size as UnpickledValue),
          'event',
        );
      }
      if (isSegment) {
        if (SEGMENT_GROW.has(action)) {
          segmentAllocs++;
          segmentDelta += size;
        } else {
          segmentFrees++;
          segmentDelta -= size;
        }
        if (segmentDelta < minDelta) minDelta = segmentDelta;
        if (segmentDelta > maxDelta) maxDelta = segmentDelta;
        return;
      }
      if (isFree && action !== freeAction && action !== 'free') return;
      const address = parseAddress(entry.addr);
      if (Number.isNaN(address)) {
        throw new TraceFormatError(
          source,
          at,
          `an \`addr\` (a non-negative integer) for ${action}`,
          typeOf(entry.addr as UnpickledValue),
          'event',
        );
      }
      const stream = events.streamId(numberOf(entry.stream) || 0);
      if (isAlloc) {
        if (size === 0) return;
        events.alloc(address, size, stream, at);
      } else {
        if (size === 0 && !events.isLive(address)) return;
        events.free(address, size, stream, at);
      }
    });
    if (events.length === 0) return;
    // Reserved bytes when the window began: what the segments list holds at the end minus the
    // growth inside the window; without a segments list, the least that keeps the sum non-negative.
    const atEnd = reservedAtEnd.get(device);
    const atStart = atEnd !== undefined ? Math.max(0, atEnd - segmentDelta) : -minDelta;
    traces.push(
      events.build(deviceTraces.length > 1 ? `${name}#cuda:${device}` : name, {
        format: 'torch-snapshot',
        source: name,
        device,
        freeAction,
        torchSegmentAllocs: segmentAllocs,
        torchSegmentFrees: segmentFrees,
        torchReservedAtStartBytes: atStart,
        torchPeakReservedBytes: atStart + maxDelta,
        torchReservedAtEndBytes: atEnd ?? atStart + segmentDelta,
        torchOoms: ooms,
        ...(Number.isFinite(firstTime) ? { durationUs: lastTime - firstTime } : {}),
        ...(allocConf !== undefined ? { torchAllocConf: allocConf } : {}),
      }),
    );
  });
  return traces;
}
