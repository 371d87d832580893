/**
 * Measures one allocator row on one trace, in two passes:
 *
 * ```
 *  sampled pass   replay in slices ─ between slices: live, reserved, external fragmentation
 *                 (a pool's from freeSpace(), others' from layout()) ─ stop exactly after the event
 *                 of peak live bytes: layout at peak (layouts cost one object per block: with many
 *                 blocks live, they are taken at fewer samples, at most LAYOUT_BLOCK_BUDGET blocks
 *                 per row, and fragmentation holds its last value in between)
 *  timed passes   whole replays, reset() between them, warmed up and timed as
 *                 `replay-timing.ts` says: median ns/event. A trace whose sampled pass alone takes
 *                 MIN_TIMED_MS, and whose first half is a warm-up (WARMUP_EVENTS), is timed by
 *                 that pass: the time of its slices of replay in its latter half, when the
 *                 replay's code is compiled and warm, without the samples between them (one
 *                 replay of a big snapshot, not three)
 * ```
 *
 * The figures of the table (peak live, peak reserved, failures) come from the sampled pass, which
 * tracks them at every event; only the time series are sampled.
 */
import type { Layout } from '@allot/core';
import { fragmentation } from '@allot/stats';
import { EventKind, type Trace } from '@allot/workloads';
import type { DeviceModel } from './device';
import type { LabRow, TraceProfile } from './registry';
import { MIN_TIMED_MS, timeReplays, WARMUP_EVENTS } from './replay-timing';
import { beginReplay, type SegmentDecisions } from './row-instance';

/** Points per time series (the report stays small whatever the trace's length). */
export const SERIES_POINTS = 400;
/**
 * Blocks visited by the layouts of one row's sampled pass, at most: bounds its time and memory
 * on traces with millions of live blocks (a layout at every sample would be points × blocks).
 */
export const LAYOUT_BLOCK_BUDGET = 4_000_000;
/** Most runs drawn per layout; smaller neighbouring runs merge into mixed ones beyond it. */
export const LAYOUT_RUNS = 2000;

/**
 * Time series of one replay, sampled at `event` (the state after that many events): live bytes are
 * the largest from the sample to the next one, that one excluded (so no peak falls between samples,
 * and a line held from each sample to the next draws it where it happened); reserved and
 * fragmentation are the values at the sample.
 */
export interface Series {
  readonly event: number[];
  readonly liveBytes: number[];
  readonly reservedBytes: number[];
  readonly externalFragmentation: number[];
}

/**
 * A layout at peak, compacted for drawing: per segment its address, size, pool and runs of blocks
 * `[offset, size, state]` (state 0 free, 1 live, 2 mixed: tiny blocks merged), offsets relative to
 * the segment.
 */
export interface LayoutView {
  readonly segments: {
    readonly address: number;
    readonly size: number;
    readonly pool?: string;
    readonly runs: number[];
  }[];
  readonly totalBytes: number;
  readonly liveBytes: number;
  readonly freeBytes: number;
  readonly blocks: number;
}

/** The figures of one row on one trace. */
export interface RowResult {
  readonly allocator: string;
  readonly kind: 'range' | 'pool';
  /** A caching row's settings as a canonical `PYTORCH_CUDA_ALLOC_CONF` string. */
  readonly config?: string;
  readonly note?: string;
  readonly events: number;
  readonly peakLiveBytes: number;
  /** High-water mark (ranges) or peak reserved from the source (pools). */
  readonly peakReservedBytes: number;
  /** `peakReservedBytes / peakLiveBytes`. */
  readonly ratio: number;
  /** `1 − largest free / total free` at the event of peak live bytes. */
  readonly externalFragmentationAtPeak: number;
  readonly failures: number;
  /**
   * A caching row on a recording with out-of-memory errors: how many of their requests it could not
   * serve at their places (0: the whole recording, the failing requests included, runs).
   */
  readonly recordedOomsFailed?: number;
  /** Index of the first failed event, or −1. */
  readonly firstFailure: number;
  /** Median ns per event of warm replays; NaN when not timed (`skipTiming`, or see `untimed`). */
  readonly nsPerEvent: number;
  readonly eventsPerSecond: number;
  readonly timedRuns: number;
  /** Why a row whose timing was asked for has no ns/event (its replays never ran warm in time). */
  readonly untimed?: string;
  readonly segments?: SegmentDecisions;
  readonly series: Series;
  readonly layoutAtPeak: LayoutView;
}

/** Largest number of blocks live at once. */
export function peakLiveBlocksOf(trace: Trace): number {
  let live = 0;
  let peak = 0;
  for (let i = 0; i < trace.length; i++) {
    if (trace.kind[i] === EventKind.Alloc) {
      if (++live > peak) peak = live;
    } else {
      live--;
    }
  }
  return peak;
}

/** Index of the event at which live bytes first reach their peak (−1 for an empty trace). */
export function peakEventIndex(trace: Trace): number {
  let live = 0;
  let peak = 0;
  let at = -1;
  for (let i = 0; i < trace.length; i++) {
    if (trace.kind[i] === EventKind.Alloc) {
      live += trace.size[i]!;
      if (live > peak) {
        peak = live;
        at = i;
      }
    } else {
      live -= trace.size[i]!;
    }
  }
  return at;
}

/** Compacts a layout for drawing (see {@link LayoutView}). */
export function layoutView(layout: Layout, maxRuns = LAYOUT_RUNS): LayoutView {
  let totalBytes = 0;
  let liveBytes = 0;
  let freeBytes = 0;
  let blocks = 0;
  for (const segment of layout.segments) {
    totalBytes += segment.size;
    for (const block of segment.blocks) {
      blocks++;
      if (block.free) freeBytes += block.size;
      else liveBytes += block.size;
    }
  }
  // Runs smaller than `grain` bytes merge with their neighbours, so at most ~maxRuns are drawn.
  const grain = totalBytes / maxRuns;
  const segments = layout.segments.map((segment) => {
    const runs: number[] = [];
    let start = -1;
    let size = 0;
    let state = -1;
    const flush = () => {
      if (size > 0) runs.push(start - segment.address, size, state);
      size = 0;
      state = -1;
    };
    for (const block of segment.blocks) {
      const blockState = block.free ? 0 : 1;
      // Same state: one run. Different states: merge only while both are too small to draw.
      if (size > 0 && (state === blockState || (size < grain && block.size < grain))) {
        if (state !== blockState) state = 2;
        size = block.address + block.size - start;
        continue;
      }
      flush();
      start = block.address;
      size = block.size;
      state = blockState;
    }
    flush();
    return {
      address: segment.address,
      size: segment.size,
      ...(segment.pool !== undefined ? { pool: segment.pool } : {}),
      runs,
    };
  });
  return { segments, totalBytes, liveBytes, freeBytes, blocks };
}

/** Options of {@link measureRow}. */
export interface MeasureOptions {
  /** Skip the timed passes (capacity searches, tests). @defaultValue false */
  readonly skipTiming?: boolean;
  /** Points per time series. @defaultValue SERIES_POINTS */
  readonly seriesPoints?: number;
  /** The GPU that pool rows model. @defaultValue no limit, no fraction */
  readonly device?: DeviceModel;
  /** A sampled pass this long (ms) is the timing (see the module comment). @defaultValue MIN_TIMED_MS */
  readonly longPassMs?: number;
  /**
   * Events replayed before a time counts (see `replay-timing.ts`): a long pass is its timing only
   * when its first half replays as many. @defaultValue WARMUP_EVENTS
   */
  readonly warmupEvents?: number;
  /**
   * Called in the sampled pass before each of the trace's releases the row replays, with its index
   * and the row's layout then (see `Replayer.beforeRelease`).
   */
  readonly beforeRelease?: (index: number, layout: () => Layout) => void;
}

/** Measures `row` on `trace` (see the module comment). */
export function measureRow(
  trace: Trace,
  row: LabRow,
  profile: TraceProfile,
  capacity: number | null,
  options: MeasureOptions = {},
): RowResult {
  const instance = row.create(trace, profile, capacity, options.device);

  // Sampled pass.
  const state = beginReplay(instance, trace);
  const points = Math.max(2, options.seriesPoints ?? SERIES_POINTS);
  const step = Math.max(1, Math.ceil(trace.length / points));
  const peakAt = peakEventIndex(trace);
  const series: Series = {
    event: [],
    liveBytes: [],
    reservedBytes: [],
    externalFragmentation: [],
  };
  // Samples between two layouts, so that layouts visit at most LAYOUT_BLOCK_BUDGET blocks.
  const layoutEvery = Math.max(
    1,
    Math.ceil((points * Math.max(1, peakLiveBlocksOf(trace))) / LAYOUT_BLOCK_BUDGET),
  );
  let samples = 0;
  let lastFragmentation = 0;
  // The largest live bytes from the last sample to the event before the current position: the
  // interval a sample's line holds its value over, so its peak is drawn where it happened.
  let intervalPeak = 0;
  // Time the sampled pass spends outside the replay (samples, layouts): a long pass is timed by the
  // rest.
  let samplingMs = 0;
  // A pool reads its fragmentation without building a layout: no garbage between slices.
  const quickFragmentation = instance.externalFragmentation;
  const sample = (layout: Layout | null, wanted = false) => {
    if (samples > 0) series.liveBytes[samples - 1] = intervalPeak;
    series.event.push(state.position);
    series.liveBytes.push(state.liveBytes);
    state.windowPeakLiveBytes = state.liveBytes;
    series.reservedBytes.push(instance.reserved(state));
    if (layout !== null) lastFragmentation = fragmentation(layout).externalFragmentation;
    else if (wanted && quickFragmentation) lastFragmentation = quickFragmentation(state);
    series.externalFragmentation.push(lastFragmentation);
    samples++;
  };
  const initial = instance.layout(state);
  sample(initial);
  // A peak inside a restored starting state is the state itself.
  let layoutAtPeak: Layout = peakAt < state.position ? initial : { segments: [] };
  let fragmentationAtPeak =
    peakAt < state.position ? fragmentation(initial).externalFragmentation : 0;
  const { beforeRelease } = options;
  if (beforeRelease !== undefined) {
    state.beforeRelease = (index) => {
      const from = performance.now();
      beforeRelease(index, () => instance.layout(state));
      samplingMs += performance.now() - from;
    };
  }
  // Timed from here, as the timed passes time `run()` alone; the replay of the pass's latter half
  // (its loop compiled and warm by then) apart.
  const sampledFrom = performance.now();
  const half = state.position + (trace.length - state.position) / 2;
  let lateMs = 0;
  let lateEvents = 0;
  while (state.position < trace.length) {
    const from = state.position;
    const sliceFrom = performance.now();
    const samplingBefore = samplingMs;
    let to = Math.min(trace.length, state.position + step);
    const crossesPeak = peakAt >= state.position && peakAt < to;
    if (crossesPeak) to = peakAt + 1;
    state.run(to - 1);
    intervalPeak = state.windowPeakLiveBytes;
    state.run(to);
    const sampledAt = performance.now();
    if (from >= half) {
      lateMs += sampledAt - sliceFrom - (samplingMs - samplingBefore);
      lateEvents += state.position - from;
    }
    const sampling = !crossesPeak || state.position === trace.length || state.position % step === 0;
    const wanted = crossesPeak || state.position === trace.length || samples % layoutEvery === 0;
    const layout =
      crossesPeak || (sampling && wanted && !quickFragmentation) ? instance.layout(state) : null;
    if (crossesPeak) {
      layoutAtPeak = layout!;
      fragmentationAtPeak = fragmentation(layout!).externalFragmentation;
    }
    if (sampling) sample(layout, wanted);
    samplingMs += performance.now() - sampledAt;
  }
  const sampledMs = performance.now() - sampledFrom;
  state.beforeRelease = undefined;
  const peakReservedBytes = instance.peakReserved(state);
  const segments = instance.segments?.();
  const { peakLiveBytes, failures, firstFailure } = state;

  // Timed passes.
  let nsPerEvent = Number.NaN;
  let timedRuns = 0;
  let untimed: string | undefined;
  if (!options.skipTiming && trace.length > 0) {
    const runOnce = () => {
      instance.reset();
      // The sampled pass's replayer, restarted: its loop is compiled and warm.
      beginReplay(instance, trace, state);
      const start = performance.now();
      state.run();
      return performance.now() - start;
    };
    // A pass this long, whose first half is a warm-up, is steady: the warm replay of its latter
    // half is the time, per event.
    const long =
      sampledMs >= (options.longPassMs ?? MIN_TIMED_MS) &&
      lateEvents > 0 &&
      trace.length - lateEvents >= (options.warmupEvents ?? WARMUP_EVENTS);
    const timing = long
      ? { median: (lateMs * trace.length) / lateEvents, runs: 1 }
      : timeReplays(runOnce, {
          events: trace.length,
          warmEvents: trace.length,
          ...(options.warmupEvents !== undefined ? { warmupEvents: options.warmupEvents } : {}),
        });
    if (timing.median === null) {
      untimed = timing.why;
    } else {
      nsPerEvent = (timing.median * 1e6) / trace.length;
      timedRuns = timing.runs;
    }
  }
  instance.reset();

  return {
    allocator: row.name,
    kind: row.kind,
    ...((row.config ?? instance.config) !== undefined
      ? { config: row.config ?? instance.config }
      : {}),
    ...(instance.note !== undefined ? { note: instance.note } : {}),
    events: trace.length,
    peakLiveBytes,
    peakReservedBytes,
    ratio: peakLiveBytes > 0 ? peakReservedBytes / peakLiveBytes : Number.NaN,
    externalFragmentationAtPeak: fragmentationAtPeak,
    failures,
    firstFailure,
    nsPerEvent,
    eventsPerSecond: Number.isFinite(nsPerEvent) ? 1e9 / nsPerEvent : Number.NaN,
    timedRuns,
    ...(untimed !== undefined ? { untimed } : {}),
    ...(segments ? { segments } : {}),
    series,
    layoutAtPeak: layoutView(layoutAtPeak),
  };
}
