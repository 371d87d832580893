/**
 * A caching pool as a lab row instance: the pool over an address-only source, on a modelled GPU
 * (`device.ts`), seeded with the trace's starting state before the first event.
 */
import {
  type AllocatorSettings,
  type CachingPool,
  cachingPool,
  DEFAULT_SETTINGS,
} from '@allot/caching';
import { externalFragmentation } from '@allot/stats';
import {
  type AddressSource,
  addressSource,
  type RecordedAddresses,
  type Replayer,
  type StartState,
  type Trace,
} from '@allot/workloads';
import { type DeviceModel, UNLIMITED_DEVICE } from './device';
import type { RowInstance } from './row-instance';
import { startOf } from './start-estimate';

/** `expandable_segments:True`, PyTorch's defaults otherwise. */
export const EXPANDABLE_SETTINGS: AllocatorSettings = {
  ...DEFAULT_SETTINGS,
  expandableSegments: true,
};

/** A pool instance, with its pool and source. */
export interface PoolInstance extends RowInstance {
  readonly pool: CachingPool;
  readonly source: AddressSource;
}

/**
 * A caching pool with `settings` over an address-only source. With `capacity` the source holds that
 * many bytes (like a device of that size, no fraction); `device` states the GPU instead.
 */
export function poolInstance(
  settings: AllocatorSettings,
  trace: Trace,
  capacity: number | null,
  device: DeviceModel = UNLIMITED_DEVICE,
  note?: string,
  options: { readonly cold?: boolean } = {},
): PoolInstance {
  const memory = device.memory ?? capacity;
  const recorded = recordedAddresses(trace);
  const source = addressSource({
    limit: memory ?? Number.POSITIVE_INFINITY,
    growable: settings.expandableSegments,
    ...(recorded !== null ? { recorded } : {}),
  });
  const pool = cachingPool({
    source,
    settings,
    ...(memory !== null ? { totalMemory: memory } : {}),
    ...(memory !== null && device.fraction !== null ? { memoryFraction: device.fraction } : {}),
  });
  // Source decisions that built the starting state: not counted as the replay's.
  let before = { acquired: 0, grown: 0, decisions: 0 };
  return {
    pool,
    source,
    target: pool,
    config: pool.config,
    layout: () => pool.layout(),
    externalFragmentation: () => {
      const free = pool.freeSpace();
      return externalFragmentation(free.largestFreeBlock, free.freeBytes);
    },
    reserved: () => source.reservedBytes(),
    peakReserved: () => source.peakReservedBytes(),
    segments: () => ({
      acquired: source.acquireCount - before.acquired,
      released: source.releaseCount,
      grown: source.growCount - before.grown,
      restored: before.acquired,
      sizes: source.decisions().slice(before.decisions),
    }),
    begin: (state) => {
      const start = startOf(trace);
      if (start !== undefined) {
        // A starting state from the other regime (plain segments for an expandable pool, or the
        // other way round) is not what this pool would have built: its blocks are allocated in
        // address order under the pool's own policy instead.
        if (
          options.cold === true ||
          !sameRegime(start, settings) ||
          !restoreStart(pool, start, state)
        ) {
          allocateStart(pool, trace, start, state);
        }
      }
      before = {
        acquired: source.acquireCount,
        grown: source.growCount,
        decisions: source.decisions().length,
      };
    },
    reset: () => {
      pool.reset();
      source.reset();
    },
    ...(note !== undefined ? { note } : {}),
  };
}

/**
 * Where the recording's driver put each segment, in the order a replay obtains them (the starting
 * state's, then the window's `cudaMalloc`s), and whether it handed out later ones lower: PyTorch
 * breaks ties between equal free blocks by address, so a replay follows these while its decisions
 * agree, then the driver's direction. Null when the recording states no addresses.
 */
function recordedAddresses(trace: Trace): RecordedAddresses | null {
  const address: number[] = [];
  const size: number[] = [];
  for (const segment of startOf(trace)?.segments ?? []) {
    address.push(segment.address);
    size.push(segment.size);
  }
  let down = 0;
  let up = 0;
  let last = -1;
  for (const segment of trace.recordedSegments ?? []) {
    if (segment.size <= 0 || segment.address === undefined) continue;
    if (last >= 0) {
      if (segment.address < last) down++;
      else up++;
    }
    last = segment.address;
    address.push(segment.address);
    size.push(segment.size);
  }
  return address.length > 0 ? { address, size, downward: down > up } : null;
}

/** Whether `start` was built under the same segment regime (expandable or not) as `settings`. */
export function sameRegime(start: StartState, settings: AllocatorSettings): boolean {
  return start.segments.every((segment) => segment.expandable === settings.expandableSegments);
}

/**
 * Seeds `pool` with a recording's starting state and moves `state` past its leading events; false
 * when the source cannot hold it (nothing changed).
 */
function restoreStart(pool: CachingPool, start: StartState, state: Replayer): boolean {
  const addresses = pool.restore(
    start.segments.map((segment) => ({
      size: segment.size,
      pool: segment.pool,
      stream: segment.stream,
      expandable: segment.expandable,
      blocks: segment.blocks,
    })),
  );
  if (addresses === null) return false;
  let live = 0;
  let blocks = 0;
  start.segments.forEach((segment, s) => {
    segment.blocks.forEach((block, i) => {
      state.addresses[block.id] = addresses[s]![i]!;
      live += block.requested;
      blocks++;
    });
  });
  passStart(start, state, live, blocks);
  return true;
}

/**
 * Allocates the starting state's blocks through `pool` (the trace's leading events, in order), so
 * that what they make the pool reserve counts as the state before the recording.
 */
function allocateStart(pool: CachingPool, trace: Trace, start: StartState, state: Replayer): void {
  let live = 0;
  let blocks = 0;
  for (let i = 0; i < start.events; i++) {
    const stream = trace.stream?.[i] ?? 0;
    const address = pool.allocateOn(stream, trace.size[i]!);
    if (address === null) {
      state.failures++;
      if (state.firstFailure < 0) state.firstFailure = i;
      continue;
    }
    state.addresses[trace.id[i]!] = address;
    live += trace.size[i]!;
    blocks++;
  }
  passStart(start, state, live, blocks);
}

/** Moves `state` past the leading events of `start`, with `blocks` blocks of `live` bytes live. */
function passStart(start: StartState, state: Replayer, live: number, blocks: number): void {
  state.liveBytes = live;
  state.liveBlocks = blocks;
  state.peakLiveBytes = live;
  state.windowPeakLiveBytes = live;
  state.position = start.events;
}
