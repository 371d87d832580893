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
 * order (ties keep file order), one {@link Trace} per device: CUDA devices (`Device Type` 1) first,
 * then the others (0 is the CPU). A free of memory allocated before the profiler started is modelled
 * as live from the start. `meta.torchPeakReservedBytes` is the largest `Total Reserved` PyTorch
 * reported in the window and `meta.torchPeakAllocatedBytes` the largest `Total Allocated`.
 */
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import { PointerEvents, parseAddress } from './pointer-events';

/** Options of {@link parseTorchProfilerTrace}. */
export interface ParseTorchProfilerOptions {
  /** Base name of the traces and label in error messages. @defaultValue 'profiler' */
  readonly name?: string;
  /** Most events per device. @defaultValue DEFAULT_MAX_EVENTS (10 M) */
  readonly maxEvents?: number;
}

/** PyTorch's `c10::DeviceType` values that have a name here. */
const DEVICE_TYPES: Readonly<Record<number, string>> = {
  0: 'cpu',
  1: 'cuda',
  8: 'meta',
  13: 'xpu',
};

interface MemoryEvent {
  readonly index: number;
  readonly ts: number;
  readonly address: number;
  readonly bytes: number;
  readonly totalAllocated: number;
  readonly totalReserved: number;
}

type Dict = { readonly [key: string]: unknown };

function isDict(value: unknown): value is Dict {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
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
    const rank = (t: number) => (t === 1 ? -1 : t);
    return rank(ta) - rank(tb) || ia - ib;
  });
  const traces: Trace[] = [];
  for (const key of keys) {
    const [type, id] = key.split(':').map(Number) as [number, number];
    const events = devices.get(key)!;
    events.sort((x, y) => x.ts - y.ts || x.index - y.index);
    const deviceName = `${DEVICE_TYPES[type] ?? `device-type-${type}`}:${id}`;
    const builder = new PointerEvents(`${name} (${deviceName})`, 'event', options.maxEvents);
    let peakReserved = 0;
    let peakAllocated = 0;
    for (const event of events) {
      if (event.totalReserved > peakReserved) peakReserved = event.totalReserved;
      if (event.totalAllocated > peakAllocated) peakAllocated = event.totalAllocated;
      if (event.bytes > 0) builder.alloc(event.address, event.bytes, 0, event.index);
      else if (event.bytes < 0) builder.free(event.address, -event.bytes, 0, event.index);
    }
    if (builder.length === 0) continue;
    const first = events[0]!.ts;
    const last = events[events.length - 1]!.ts;
    traces.push(
      builder.build(devices.size > 1 ? `${name}#${deviceName}` : name, {
        format: 'torch-profiler',
        source: name,
        device: deviceName,
        torchPeakReservedBytes: peakReserved,
        torchPeakAllocatedBytes: peakAllocated,
        durationUs: last - first,
      }),
    );
  }
  return traces;
}
