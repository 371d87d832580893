/**
 * Reader of PyTorch profiler traces (Chrome trace JSON, from `prof.export_chrome_trace()` or the
 * TensorBoard plugin) recorded with `profile_memory=True`. Memory events are instant events named
 * `[memory]`:
 *
 * ```
 * { "ph": "i", "name": "[memory]", "ts": 1234.5, "args": { "Addr": 140…, "Bytes": 4096,
 *   "Total Allocated": 8192, "Total Reserved": 2097152, "Device Type": 1, "Device Id": 0 } }
 * ```
 *
 * `Bytes` is positive for an allocation and negative for a free. Events are replayed in timestamp
 * order (ties keep file order), one {@link Trace} per GPU whose memory PyTorch's caching allocator
 * manages (`Device Type` 1, CUDA, or 6, HIP on ROCm); other devices (0 is the CPU) only with
 * `allDevices`, or when no such GPU has events. A free of memory allocated before the profiler started is modelled
 * as live from the start. `meta.torchPeakReservedBytes` is the largest `Total Reserved` PyTorch
 * reported in the window and `meta.torchPeakAllocatedBytes` the largest `Total Allocated`.
 *
 * The profiler starts after the program has allocated, and records no segments, so the starting
 * state of a GPU ({@link Trace.start}, `fidelity: 'estimated'`) is rebuilt from the first
 * event's `Total Allocated` and `Total Reserved` (less its own bytes) with PyTorch's segment sizes:
 * - blocks freed in the window without having been allocated in it are placed at their addresses:
 *   blocks of 1 MiB or less in 2 MiB small-pool segments on 2 MiB boundaries, larger ones in large
 *   segments (20 MiB, or the block rounded up to 2 MiB from 10 MiB on) that grow to take in every
 *   block they overlap;
 * - the rest of `Total Allocated` (blocks live throughout the window) is one block in a segment of
 *   its own;
 * - reserved bytes beyond these segments are one cached, free large segment.
 * A free never changes `Total Reserved`, so when the first event is an allocation that needed a new
 * segment the reserved bytes before it are overestimated by that segment at most.
 */
import { TraceFormatError } from '../errors';
import type { StartBlock, StartSegment, StartState, Trace } from '../trace';
import { ALLOC, FREE, PointerTrace } from './pointer-trace';
import { isDict, parseAddress } from './recorded-values';

/** Options of {@link parseTorchProfilerTrace}. */
export interface ParseTorchProfilerOptions {
  /** Base name of the traces and label in error messages. @defaultValue 'profiler' */
  readonly name?: string;
  /** Most events per device. @defaultValue DEFAULT_MAX_EVENTS (10 M) */
  readonly maxEvents?: number;
  /**
   * Every device with memory events, the CPU included; by default only the GPUs (CUDA, HIP) when
   * there are any (the CPU's events are host tensors, not what a GPU pool holds). @defaultValue false
   */
  readonly allDevices?: boolean;
}

/** PyTorch's `c10::DeviceType` values that have a name here (`c10/core/DeviceType.h`). */
const DEVICE_TYPES: Readonly<Record<number, string>> = {
  0: 'cpu',
  1: 'cuda',
  6: 'hip',
  9: 'xla',
  12: 'xpu',
  13: 'mps',
  14: 'meta',
  15: 'hpu',
};

/**
 * Device types whose memory PyTorch's caching allocator manages: CUDA, and HIP, as ROCm builds
 * record an AMD GPU's events (the same allocator, hipified).
 */
const CACHING_DEVICE_TYPES: ReadonlySet<number> = new Set([1, 6]);

interface MemoryEvent {
  readonly index: number;
  readonly ts: number;
  readonly address: number;
  readonly bytes: number;
  readonly totalAllocated: number;
  readonly totalReserved: number;
}

type Dict = { readonly [key: string]: unknown };

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}

/**
 * Whether `json` is what `torch.profiler`'s `export_memory_timeline(…raw…)` writes: a list of
 * `[time, action, bytes, category]` rows of numbers.
 */
function isMemoryTimeline(json: unknown): boolean {
  if (!Array.isArray(json) || json.length === 0) return false;
  return json
    .slice(0, 16)
    .every(
      (row) =>
        Array.isArray(row) && row.length === 4 && row.every((cell) => typeof cell === 'number'),
    );
}

/**
 * The traces of a parsed Chrome trace: one per device with memory events.
 *
 * @throws TraceFormatError (with the 1-based index in `traceEvents`) for a malformed `[memory]`
 * event, or when the trace holds no memory events at all.
 */
export function parseTorchProfilerTrace(
  json: unknown,
  options: ParseTorchProfilerOptions = {},
): Trace[] {
  const name = options.name ?? 'profiler';
  if (isMemoryTimeline(json)) {
    throw new TraceFormatError(
      name,
      1,
      'a profiler trace or a memory snapshot; this is the raw output of export_memory_timeline() ' +
        '([time, action, bytes, category] rows, no addresses to replay): record a snapshot with ' +
        'torch.cuda.memory._record_memory_history() and _dump_snapshot(), or a profiler trace ' +
        'with profile_memory=True and export_chrome_trace()',
      'memory-timeline rows',
      'event',
    );
  }
  const list = Array.isArray(json) ? json : isDict(json) ? json.traceEvents : undefined;
  if (!Array.isArray(list)) {
    throw new TraceFormatError(
      name,
      1,
      'a Chrome trace: an object with a `traceEvents` list, or a list of events',
      describe(json),
      'event',
    );
  }
  const devices = new Map<string, MemoryEvent[]>();
  list.forEach((event: unknown, index: number) => {
    if (!isDict(event) || event.name !== '[memory]') return;
    const at = index + 1;
    const fail = (expected: string, found: unknown): never => {
      throw new TraceFormatError(name, at, expected, describe(found), 'event');
    };
    const args = event.args;
    if (!isDict(args)) fail('`args` on a [memory] event', args);
    const a = args as Dict;
    const bytes = a.Bytes;
    if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes)) {
      fail('an integer `Bytes` (negative for a free)', bytes);
    }
    const address = parseAddress(a.Addr);
    if (Number.isNaN(address)) fail('an `Addr` (a non-negative integer)', a.Addr);
    const ts = typeof event.ts === 'string' ? Number(event.ts) : event.ts;
    if (typeof ts !== 'number' || !Number.isFinite(ts)) fail('a numeric `ts` (µs)', event.ts);
    const type = a['Device Type'] ?? 0;
    const id = a['Device Id'] ?? 0;
    if (typeof type !== 'number' || typeof id !== 'number') {
      fail('numeric `Device Type` and `Device Id`', typeof type !== 'number' ? type : id);
    }
    const key = `${type}:${id}`;
    let events = devices.get(key);
    if (!events) devices.set(key, (events = []));
    events.push({
      index: at,
      ts: ts as number,
      address,
      bytes: bytes as number,
      totalAllocated: typeof a['Total Allocated'] === 'number' ? a['Total Allocated'] : 0,
      totalReserved: typeof a['Total Reserved'] === 'number' ? a['Total Reserved'] : 0,
    });
  });
  const deviceMemory = new Map<number, number>();
  if (isDict(json) && Array.isArray(json.deviceProperties)) {
    for (const device of json.deviceProperties) {
      if (!isDict(device)) continue;
      const { id, totalGlobalMem } = device;
      if (typeof id === 'number' && typeof totalGlobalMem === 'number' && totalGlobalMem > 0) {
        deviceMemory.set(id, totalGlobalMem);
      }
    }
  }
  if (devices.size === 0) {
    throw new TraceFormatError(
      name,
      1,
      '`[memory]` events (record with torch.profiler.profile(profile_memory=True))',
      `${list.length} events and none named [memory]`,
      'event',
    );
  }
  const keys = [...devices.keys()].sort((a, b) => {
    const [ta, ia] = a.split(':').map(Number) as [number, number];
    const [tb, ib] = b.split(':').map(Number) as [number, number];
    const rank = (t: number) => (CACHING_DEVICE_TYPES.has(t) ? t - 100 : t);
    return rank(ta) - rank(tb) || ia - ib;
  });
  const traces: Trace[] = [];
  const gpu = (key: string) => CACHING_DEVICE_TYPES.has(Number(key.split(':')[0]));
  const anyGpu = keys.some(gpu);
  for (const key of keys) {
    const [type, id] = key.split(':').map(Number) as [number, number];
    const caching = CACHING_DEVICE_TYPES.has(type);
    if (anyGpu && !caching && options.allDevices !== true) continue;
    const events = devices.get(key)!;
    events.sort((x, y) => x.ts - y.ts || x.index - y.index);
    const deviceName = `${DEVICE_TYPES[type] ?? `device-type-${type}`}:${id}`;
    const builder = new PointerTrace(`${name} (${deviceName})`, 'event', options.maxEvents);
    let peakReserved = 0;
    let peakAllocated = 0;
    const reservedAfter: number[] = [];
    for (const event of events) {
      if (event.totalReserved > peakReserved) peakReserved = event.totalReserved;
      if (event.totalAllocated > peakAllocated) peakAllocated = event.totalAllocated;
      if (event.bytes === 0) continue;
      const op = event.bytes > 0 ? ALLOC : FREE;
      builder.add(op, event.address, Math.abs(event.bytes), 0, event.index, event.ts);
      reservedAfter.push(event.totalReserved);
    }
    if (builder.length === 0) continue;
    builder.settle();
    const first = events[0]!;
    const last = events[events.length - 1]!.ts;
    const allocatedBefore = Math.max(0, first.totalAllocated - first.bytes);
    const reservedBefore = Math.max(first.totalReserved, allocatedBefore);
    const start =
      caching && reservedBefore > 0
        ? estimateStart(builder, allocatedBefore, reservedBefore)
        : null;
    const trace = builder.finish(devices.size > 1 ? `${name}#${deviceName}` : name, {
      format: 'torch-profiler',
      source: name,
      device: deviceName,
      torchPeakReservedBytes: peakReserved,
      torchPeakAllocatedBytes: peakAllocated,
      torchAllocatedAtStartBytes: allocatedBefore,
      torchReservedAtStartBytes: reservedBefore,
      startState: start === null ? 'none recorded' : 'estimated',
      ...(deviceMemory.has(id) && caching ? { deviceMemoryBytes: deviceMemory.get(id)! } : {}),
      durationUs: last - first.ts,
    });
    // PyTorch's own reserved line: the starting figure through the leading events.
    const recordedReserved = new Float64Array(trace.length);
    const leading = trace.length - reservedAfter.length;
    recordedReserved.fill(reservedBefore, 0, leading);
    recordedReserved.set(reservedAfter, leading);
    const withLine = { ...trace, recordedReserved };
    traces.push(start === null ? withLine : { ...withLine, start });
  }
  return traces;
}

/** PyTorch's segment sizes (`CUDACachingAllocator.cpp`), for the estimate. */
const SMALL_SIZE = 2 ** 20;
const SMALL_SEGMENT = 2 ** 21;
const LARGE_SEGMENT = 20 * 2 ** 20;
const MIN_LARGE_ALLOC = 10 * 2 ** 20;
const ROUND_LARGE = 2 ** 21;
const MIN_BLOCK = 512;

const roundUp = (value: number, unit: number) => Math.ceil(value / unit) * unit;

/** Segment size PyTorch allocates for a block of `size` bytes. */
function segmentFor(size: number): number {
  if (size <= SMALL_SIZE) return SMALL_SEGMENT;
  if (size < MIN_LARGE_ALLOC) return LARGE_SEGMENT;
  return roundUp(size, ROUND_LARGE);
}

type Draft = Omit<StartSegment, 'blocks' | 'size'> & { size: number; blocks: StartBlock[] };

/**
 * The estimated starting state (see the module comment). Registers the bytes live throughout the
 * window with `events` as one leading block. Returns null when the blocks cannot be placed.
 */
function estimateStart(
  events: PointerTrace,
  allocatedBefore: number,
  reservedBefore: number,
): StartState | null {
  const known = events.preexistingBlocks();
  let knownBytes = 0;
  for (const block of known) knownBytes += block.size;
  const unknown = roundUp(Math.max(0, allocatedBefore - knownBytes), MIN_BLOCK);
  if (unknown > 0) events.liveThroughout(-1, unknown, 0);
  const blocks = events.preexistingBlocks();
  const order = blocks.map((_, id) => id).filter((id) => blocks[id]!.address >= 0);
  order.sort((x, y) => blocks[x]!.address - blocks[y]!.address);
  const segments: Draft[] = [];
  let current: Draft | null = null;
  for (const id of order) {
    const { address, size } = blocks[id]!;
    if (address % MIN_BLOCK !== 0) return null;
    const small = size <= SMALL_SIZE;
    if (current !== null && address < current.address + current.size) {
      if (current.pool === 'small' ? !small : small) return null;
      const end = address + roundUp(size, MIN_BLOCK);
      if (end > current.address + current.size) {
        if (small) return null;
        current.size = roundUp(end - current.address, ROUND_LARGE);
      }
    } else {
      const base = small ? Math.floor(address / SMALL_SEGMENT) * SMALL_SEGMENT : address;
      current = {
        address: base,
        size: small ? SMALL_SEGMENT : segmentFor(size),
        pool: small ? 'small' : 'large',
        stream: 0,
        expandable: false,
        blocks: [],
      };
      if (address + size > base + current.size)
        current.size = roundUp(address + size - base, ROUND_LARGE);
      segments.push(current);
    }
    current.blocks.push({ id, offset: address - current.address, requested: size });
  }
  let top =
    segments.length > 0
      ? segments[segments.length - 1]!.address + segments[segments.length - 1]!.size
      : 0;
  const gap = ROUND_LARGE;
  if (unknown > 0) {
    const id = blocks.length - 1;
    const size = roundUp(unknown, ROUND_LARGE);
    segments.push({
      address: top + gap,
      size,
      pool: unknown <= SMALL_SIZE ? 'small' : 'large',
      stream: 0,
      expandable: false,
      blocks: [{ id, offset: 0, requested: unknown }],
    });
    top += gap + size;
  }
  let placed = 0;
  for (const segment of segments) placed += segment.size;
  const rest = Math.floor((reservedBefore - placed) / ROUND_LARGE) * ROUND_LARGE;
  if (rest > 0) {
    segments.push({
      address: top + gap,
      size: rest,
      pool: 'large',
      stream: 0,
      expandable: false,
      blocks: [],
    });
  }
  return { events: blocks.length, segments, fidelity: 'estimated' };
}
