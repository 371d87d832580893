/**
 * The out-of-memory post-mortem: a recording's `oom` entries, the wall PyTorch hit, the replay of the
 * recorded settings at that wall (does the model fail at the same request?), the allocator's state
 * at the failing request, and the settings under which the whole recording runs without one.
 *
 * ```
 *  oom entry ─► wall = reserved + device_free ─► replay the recorded settings at the wall, up to the
 *  entry, then ask for its request ─► reproduced (failed there) | failed earlier | served
 *                                       └─► the pool's state then: free in the cache, largest free
 *                                           block, remainders, who holds the memory
 *  tune at the wall, each run asking for the request too ─► avoidedBy (most headroom first)
 * ```
 */
import { allocationSize, countAllocConfKeys, parseAllocConf } from '@allot/caching';
import type { Layout } from '@allot/core';
import { NOT_LIVE, type StackFrame, type Trace } from '@allot/workloads';
import type { WallSource } from '../units';
import { type DeviceModel, deviceCap, recordedDevice, replayDevice } from './device';
import { frameText, type Holder, holdersOf } from './holders';
import { type LayoutView, layoutView } from './measure';
import { oomProbes } from './oom-probes';
import { poolInstance } from './pool-instance';
import { beginReplay } from './row-instance';
import { stackSource } from './stack-source';
import { runPool, segmentCalls, type TuneResult, tune } from './tune';

/**
 * An out-of-memory error as the recording states it, and the memory PyTorch could use then: what
 * it had reserved plus what the driver had free (`capacitySource` `oom`), unless `--memory` (and
 * `--fraction`) state the device. With the post-mortem (the first error of a trace replayed with
 * its recorded settings) when the wall is known.
 */
export interface OomFigures {
  readonly recorded: {
    /** Index of the `oom` entry in its device's trace (`device_traces[d]`, from 0). */
    readonly event: number;
    readonly sizeBytes: number;
    /**
     * What PyTorch's error names ("Tried to allocate"): the request rounded up to the segment it
     * asked the driver for (`get_allocation_size`).
     */
    readonly allocationBytes?: number;
    readonly stream: number;
    readonly deviceFreeBytes: number | null;
    readonly reservedBytes: number;
    readonly allocatedBytes: number;
    readonly timeUs?: number;
  };
  /** The wall: null when neither the entry nor the options state it. */
  readonly capacityBytes: number | null;
  /**
   * Where the wall came from: the entry (reserved + `device_free`), the options, or the card and
   * per-process fraction a recorder's sidecar states (`recorded`: PyTorch's cap, not the device).
   */
  readonly capacitySource: WallSource | null;
  /** The failing request's stack, innermost first, as `name (file:line)`. */
  readonly frames?: readonly string[];
  /** Its innermost frame in the program's own code (see `stack-source.ts`), when it has one. */
  readonly at?: string;
  /** Else what made the request, in words (a library's frame, C++ during backward, C++ alone). */
  readonly madeBy?: string;
  /** What is wrong with the entry, if anything (the replay goes on). */
  readonly problem?: string;
  /**
   * The model's request that failed at the wall, indexed as `recorded.event`: the recorded one when
   * the replay fails there; null when the model served every request up to and including it.
   */
  readonly reproduced?: { readonly event: number; readonly sizeBytes: number } | null;
  /** Where the replay failed first, when that is an earlier request than the recorded one. */
  readonly failedEarlier?: { readonly event: number; readonly sizeBytes: number };
  /** Bytes cached (free) in the model's pool at the failing request. */
  readonly freeInCacheBytes?: number;
  /** The largest of those free blocks. */
  readonly largestFreeBlockBytes?: number;
  /** The model's state at the failing request (see {@link OomState}). */
  readonly state?: OomState;
  /** Settings under which the whole recording, the failing request included, runs at the wall. */
  readonly avoidedBy?: readonly AvoidingSetting[];
  /** The model's segments and blocks at the failing request (for the report's drawing). */
  readonly layoutAtFailure?: LayoutView;
  /** The same moment under the setting with the most headroom, the request served. */
  readonly adviceLayout?: { readonly allocConf: string; readonly layout: LayoutView };
  /** When no setting avoids it: the memory the best one would need, and the least possible. */
  readonly needs?: {
    readonly bestAllocConf: string;
    readonly bestBytes: number;
    readonly leastBytes: number;
  };
}

/** A setting that avoids the out-of-memory error, with its peak and the room left under the wall. */
export interface AvoidingSetting {
  /** `PYTORCH_CUDA_ALLOC_CONF` (`""` for the defaults). */
  readonly allocConf: string;
  readonly peakReservedBytes: number;
  readonly headroomBytes: number;
}

/** The model's pool at the failing request, in the terms of PyTorch's message and beyond it. */
export interface OomState {
  readonly requestBytes: number;
  readonly reservedBytes: number;
  readonly allocatedBytes: number;
  /** Reserved but unallocated: free blocks in the cache. */
  readonly freeInCacheBytes: number;
  readonly freeBlocks: number;
  readonly largestFreeBlockBytes: number;
  /** Free blocks smaller than the request. */
  readonly tooSmallBlocks: number;
  /**
   * Free bytes in segments partly in use (split-off remainders, which `empty_cache` cannot give
   * back): what `max_split_size_mb` and `expandable_segments` act on.
   */
  readonly remainderBytes: number;
  /** Free bytes by pool and stream, largest first. */
  readonly byPool: readonly {
    readonly pool: string;
    readonly stream: number;
    readonly freeBytes: number;
    readonly reservedBytes: number;
  }[];
  /** The top source lines holding memory then, when the recording has stacks. */
  readonly holders: readonly Holder[];
}

/** The recorded OOMs of `trace`, each with its wall (see {@link OomFigures}). */
export function oomFigures(trace: Trace, device?: DeviceModel): OomFigures[] {
  // The options' device, else the one the recording states; its cap as PyTorch computes it.
  const given = device?.memory != null ? device : null;
  const chosen = given ?? recordedDevice(trace);
  const stated = chosen === null ? null : deviceCap(chosen);
  const statedBy: WallSource =
    given === null ? 'recorded' : given.fraction != null ? '--fraction' : '--memory';
  return (trace.recordedOoms ?? []).map((oom) => ({
    recorded: {
      event: oom.entry,
      sizeBytes: oom.sizeBytes,
      allocationBytes: allocationSize(oom.sizeBytes),
      stream: oom.stream,
      deviceFreeBytes: oom.deviceFreeBytes ?? null,
      reservedBytes: oom.reservedBytes,
      allocatedBytes: oom.allocatedBytes,
      ...(oom.timeUs !== undefined ? { timeUs: oom.timeUs } : {}),
    },
    capacityBytes: stated ?? oom.capacityBytes ?? null,
    capacitySource: stated !== null ? statedBy : oom.capacityBytes !== undefined ? 'oom' : null,
    ...(oom.frames && oom.frames.length > 0
      ? { frames: oom.frames.map(frameText), ...requestSource(oom.frames) }
      : {}),
    ...(oom.problem ? { problem: oom.problem } : {}),
  }));
}

/** Where a failing request's stack leads: a line of your own code, or what made it. */
function requestSource(frames: readonly StackFrame[]): { at: string } | { madeBy: string } {
  const { origin, text } = stackSource(frames);
  return origin === 'code' ? { at: text } : { madeBy: text };
}

/** The recording's entry index of trace event `event` (`-1` for a starting state's events). */
function entryOf(trace: Trace, event: number): number {
  const location = trace.location?.[event] ?? 0;
  return location > 0 ? location - 1 : -1;
}

/**
 * Replays `trace` with `config` on `device` up to its first recorded out-of-memory error and asks
 * for its request: whether the model fails there, earlier, or not at all, and its state then.
 */
export function reproduce(
  trace: Trace,
  config: string,
  device: DeviceModel,
): Pick<
  OomFigures,
  | 'reproduced'
  | 'failedEarlier'
  | 'freeInCacheBytes'
  | 'largestFreeBlockBytes'
  | 'state'
  | 'layoutAtFailure'
> {
  const probe = oomProbes(trace)[0];
  const oom = trace.recordedOoms?.[0];
  if (probe === undefined || oom === undefined) return {};
  const instance = poolInstance(parseAllocConf(config), trace, null, device);
  const state = beginReplay(instance, trace, undefined, { stopOnFailure: true });
  state.run(probe.event);
  let failing: { event: number; sizeBytes: number; stream: number };
  let failedEarlier: OomFigures['failedEarlier'];
  if (state.failures > 0) {
    const at = state.firstFailure;
    failing = {
      event: entryOf(trace, at),
      sizeBytes: trace.size[at]!,
      stream: trace.stream?.[at] ?? 0,
    };
    failedEarlier = { event: failing.event, sizeBytes: failing.sizeBytes };
  } else {
    const address = instance.pool.allocateOn(probe.stream, probe.sizeBytes);
    if (address !== null) return { reproduced: null };
    failing = { event: oom.entry, sizeBytes: oom.sizeBytes, stream: probe.stream };
  }
  const layout = instance.pool.layout();
  const explained = stateAt(trace, layout, state.addresses, state.position, failing.sizeBytes);
  return {
    reproduced:
      failedEarlier === undefined ? { event: failing.event, sizeBytes: failing.sizeBytes } : null,
    ...(failedEarlier !== undefined ? { failedEarlier } : {}),
    freeInCacheBytes: explained.freeInCacheBytes,
    largestFreeBlockBytes: explained.largestFreeBlockBytes,
    state: explained,
    layoutAtFailure: layoutView(layout),
  };
}

/**
 * The pool under `config` at the recorded error, its request served: what the advice changes at the
 * moment the recording failed. Null when that setting fails before or at it.
 */
function layoutUnder(trace: Trace, config: string, device: DeviceModel): LayoutView | null {
  const probe = oomProbes(trace)[0];
  if (probe === undefined) return null;
  const instance = poolInstance(parseAllocConf(config), trace, null, device);
  const state = beginReplay(instance, trace, undefined, { stopOnFailure: true });
  state.run(probe.event);
  if (state.failures > 0) return null;
  if (instance.pool.allocateOn(probe.stream, probe.sizeBytes) === null) return null;
  return layoutView(instance.pool.layout());
}

/** The pool's state from its layout, the request, and who holds the live blocks. */
function stateAt(
  trace: Trace,
  layout: Layout,
  addresses: Float64Array,
  position: number,
  requestBytes: number,
): OomState {
  let reserved = 0;
  let allocated = 0;
  let free = 0;
  let freeBlocks = 0;
  let largest = 0;
  let tooSmall = 0;
  let remainders = 0;
  const pools = new Map<
    string,
    { pool: string; stream: number; freeBytes: number; reservedBytes: number }
  >();
  for (const segment of layout.segments) {
    const pool = String((segment as { pool?: string }).pool ?? 'large');
    const stream = Number((segment as { stream?: number }).stream ?? 0);
    const key = `${pool}/${stream}`;
    const entry = pools.get(key) ?? { pool, stream, freeBytes: 0, reservedBytes: 0 };
    pools.set(key, entry);
    entry.reservedBytes += segment.size;
    reserved += segment.size;
    const inUse = segment.blocks.some((block) => !block.free);
    for (const block of segment.blocks) {
      if (!block.free) {
        allocated += block.size;
        continue;
      }
      free += block.size;
      freeBlocks++;
      entry.freeBytes += block.size;
      if (block.size > largest) largest = block.size;
      if (block.size < requestBytes) tooSmall++;
      if (inUse) remainders += block.size;
    }
  }
  const sizeOf = new Float64Array(trace.allocCount);
  for (let i = 0; i < position; i++) if (trace.kind[i] === 0) sizeOf[trace.id[i]!] = trace.size[i]!;
  const live: number[] = [];
  for (let block = 0; block < addresses.length; block++) {
    if (addresses[block] !== NOT_LIVE) live.push(block);
  }
  return {
    requestBytes,
    reservedBytes: reserved,
    allocatedBytes: allocated,
    freeInCacheBytes: free,
    freeBlocks,
    largestFreeBlockBytes: largest,
    tooSmallBlocks: tooSmall,
    remainderBytes: remainders,
    byPool: [...pools.values()].sort((a, b) => b.freeBytes - a.freeBytes),
    holders: holdersOf(trace, live, (block) => sizeOf[block]!),
  };
}

/**
 * The settings under which the whole recording, the failing request included, runs on `device`:
 * the tuner's search, each run asking for the recorded requests at their place. Most headroom first;
 * when none avoids it, what the best setting would need, and the least any could (the peak live
 * bytes, or the bytes live at the error plus its request).
 */
export function avoidance(
  trace: Trace,
  device: DeviceModel & { memory: number },
  tuning?: TuneResult,
): Pick<OomFigures, 'avoidedBy' | 'needs'> {
  const search =
    tuning && tuning.device.memory === device.memory && tuning.device.fraction === device.fraction
      ? tuning
      : tune(trace, device);
  const wall = device.memory * (device.fraction ?? 1);
  const avoidedBy = search.tried
    .filter((run) => run.failures === 0)
    .sort(
      (a, b) =>
        a.peakReservedBytes - b.peakReservedBytes ||
        countAllocConfKeys(a.config) - countAllocConfKeys(b.config) ||
        segmentCalls(a) - segmentCalls(b),
    )
    .map((run) => ({
      allocConf: run.config,
      peakReservedBytes: run.peakReservedBytes,
      headroomBytes: wall - run.peakReservedBytes,
    }));
  if (avoidedBy.length > 0) return { avoidedBy };
  const best = runPool(trace, search.best.settings);
  const oom = trace.recordedOoms?.[0];
  const atError = oom !== undefined ? oom.allocatedBytes + oom.sizeBytes : 0;
  return {
    avoidedBy,
    needs: {
      bestAllocConf: search.best.config,
      bestBytes: best.peakReservedBytes,
      leastBytes: Math.max(best.peakLiveBytes, atError),
    },
  };
}

/** The whole post-mortem of `trace`'s first recorded out-of-memory error, at its wall. */
export function postMortem(
  trace: Trace,
  config: string,
  device: DeviceModel | undefined,
  tuning?: TuneResult,
): Partial<OomFigures> {
  const chosen = device?.memory != null ? device : replayDevice(trace);
  const memory = chosen.memory;
  if (memory === null) return {};
  const wallDevice = { memory, fraction: chosen.fraction };
  const avoided = avoidance(trace, wallDevice, tuning);
  const best = avoided.avoidedBy?.[0];
  const layout = best === undefined ? null : layoutUnder(trace, best.allocConf, wallDevice);
  return {
    ...reproduce(trace, config, wallDevice),
    ...avoided,
    ...(best !== undefined && layout !== null
      ? { adviceLayout: { allocConf: best.allocConf, layout } }
      : {}),
  };
}
