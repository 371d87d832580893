/**
 * What the report says about one trace, beyond the table: a common time axis, PyTorch's own reserved
 * line, the active-memory timeline, the allocations live at the peak, and a diagnosis in plain words.
 * Computed once per workload from the trace and the rows' results, in one pass over the events.
 *
 * ```
 *  trace ─► grid of GRID_POINTS events (the peak among them) ─► seconds, live, PyTorch's reserved
 *        ─► block lifetimes ─► the largest drawn one by one (up to TIMELINE_BYTES), the rest one band
 *        ─► blocks live at the peak ─► the largest, grouped by size
 *  rows  ─► the reference row's layout at peak ─► live / fragmented / cached ─► diagnosis
 *  tune() (with a caching-tuned row) ─► the recommended PYTORCH_CUDA_ALLOC_CONF and its saving
 * ```
 */
import { EventKind, type Trace } from '@allot/workloads';
import { formatBytes, formatCount, formatPercent, formatRatio, formatSeconds } from '../units';
import { type Advice, adviceOf, adviceParagraph } from './advice';
import { frameText, type Holder, holdersOf } from './holders';
import { type LayoutView, peakEventIndex, type RowResult } from './measure';
import { stackSource } from './stack-source';
import { type StackTree, stackTreeOf } from './stack-tree';
import type { TuneResult } from './tune';

/** Points of the common grid (the event of peak live bytes is added). */
export const GRID_POINTS = 480;
/**
 * Allocations the timeline draws one by one at most (the largest and the most bytes × time, in
 * turn); the rest are summed into one band.
 */
export const TIMELINE_ALLOCATIONS = 5000;
/**
 * The most the drawn allocations may weigh in the report's data, as JSON (stack frames make most of
 * it): the report of a 1 GB snapshot stays under 10 MB.
 */
export const TIMELINE_BYTES = 4 * 1024 * 1024;
/** Rows of the table of allocations live at the peak. */
export const PEAK_TABLE_ROWS = 12;
/** Frames kept per allocation in the report. */
export const REPORT_FRAMES = 16;

/** An allocation as the report shows it. */
export interface ReportAllocation {
  /** Block id in the trace. */
  readonly id: number;
  readonly size: number;
  /** Event index of the allocation and of the free (−1: live at the end). */
  readonly allocEvent: number;
  readonly freeEvent: number;
  /** Seconds since the first event, when the trace has times. */
  readonly allocSeconds?: number;
  readonly freeSeconds?: number;
  readonly stream: number;
  /** `name (file:line)`, innermost first, when recorded. */
  readonly frames?: readonly string[];
  /** What made it, from its stack (`stack-source.ts`), when the trace has stacks (the peak's largest). */
  readonly source?: string;
}

/** The active-memory timeline: drawn allocations over grid indices, and the rest as one band. */
export interface Timeline {
  /** Drawn allocations in allocation order, each live over grid points `[from, to)`. */
  readonly allocations: readonly (ReportAllocation & {
    readonly from: number;
    readonly to: number;
  })[];
  /** Live bytes of the allocations not drawn, per grid point. */
  readonly rest: readonly number[];
  /** Allocations in the trace, and how many of them are drawn. */
  readonly total: number;
}

/** The diagnosis in plain words, one paragraph per topic. */
export interface Diagnosis {
  /** Which row the split of reserved memory is read from. */
  readonly row: string;
  readonly reservedBytes: number;
  readonly liveBytes: number;
  /** Free bytes in segments that also hold live blocks. */
  readonly fragmentedBytes: number;
  /** Free bytes in segments that hold no live block. */
  readonly cachedBytes: number;
  /** Sentences: the split of reserved, the peak, the recommendation, the action. */
  readonly split: string;
  readonly peak: string;
  readonly advice?: string;
  readonly action: string;
}

/** Everything the report adds per workload (see the module comment). */
export interface Explanation {
  /** Event index of each grid point. */
  readonly gridEvents: readonly number[];
  /** Seconds since the first event at each grid point, when the trace has times. */
  readonly gridSeconds?: readonly number[];
  /**
   * Live requested bytes, the largest within the interval that begins at each grid point (from its
   * event to the next point's, excluded; the last point: after the last event).
   */
  readonly liveBytes: readonly number[];
  /** PyTorch's recorded reserved bytes, the largest within each interval as for `liveBytes`. */
  readonly recordedReserved?: readonly number[];
  /** Seconds of each row's sampled events (`row.series.event`), when the trace has times. */
  readonly rowSeconds?: readonly (readonly number[])[];
  readonly timeline: Timeline;
  readonly peak: {
    readonly event: number;
    readonly seconds?: number;
    readonly liveBytes: number;
    /** The largest allocations live at the peak. */
    readonly largest: readonly ReportAllocation[];
    /** Live bytes at the peak by request size, the largest sums first. */
    readonly bySize: readonly { size: number; count: number; bytes: number }[];
    /** Who holds the live bytes, by the top user frame of each block (stacks recorded only). */
    readonly bySource: readonly Holder[];
    /** The same blocks as a call tree, from the outermost frame in (stacks recorded only). */
    readonly stacks?: StackTree;
  };
  readonly diagnosis: Diagnosis;
  readonly advice?: Advice;
  /** The row replaying the recording's own settings, when there is one. */
  readonly recordedRow?: string;
}

/** Options of {@link explainWorkload}. */
export interface ExplainOptions {
  /** The row replaying the recording's own settings, read first for the diagnosis. */
  readonly recordedRow?: string;
  /** The tuner's result (PyTorch traces). */
  readonly tuning?: TuneResult;
  /** PyTorch's recorded peak reserved bytes. */
  readonly recordedPeakReservedBytes?: number;
}

/** Whether a trace is PyTorch's (a snapshot or a profiler trace). */
export function isPyTorchTrace(meta: Trace['meta']): boolean {
  return meta.format === 'torch-snapshot' || meta.format === 'torch-profiler';
}

/**
 * The rows an answer may name: on a PyTorch trace only the caching rows, the allocators PyTorch can
 * use (the ranges are there for comparison); on any other trace every row.
 */
export function usableRows<T extends { readonly kind: 'range' | 'pool' }>(
  meta: Trace['meta'],
  rows: readonly T[],
): T[] {
  return isPyTorchTrace(meta) ? rows.filter((row) => row.kind === 'pool') : [...rows];
}

/** Grid of about `points` event indices over `[0, length)`, `extra` included, ascending. */
function gridOf(length: number, points: number, extra: number): number[] {
  if (length === 0) return [];
  const set = new Set<number>();
  const n = Math.min(points, length);
  for (let j = 0; j < n; j++) set.add(Math.round((j * (length - 1)) / Math.max(1, n - 1)));
  if (extra >= 0 && extra < length) set.add(extra);
  return [...set].sort((a, b) => a - b);
}

/** First index `j` of ascending `grid` with `grid[j] >= event` (`grid.length` when none). */
function gridIndexAtOrAfter(grid: readonly number[], event: number): number {
  let lo = 0;
  let hi = grid.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (grid[mid]! < event) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `items` in the order of `compare` (by `key`, largest first, then anything else), as a full sort
 * gives it, sorted only as far as it is read: the first `need` at once, from the items whose key is
 * at least the `need`-th largest (ties included), and all of them on the first read past those.
 * The timeline reads a few thousand of a trace's hundreds of thousands of allocations.
 */
export function sortedAsFarAsRead<T>(
  items: readonly T[],
  key: (item: T) => number,
  compare: (a: T, b: T) => number,
  need: number,
): (k: number) => T | undefined {
  let sorted: T[];
  let whole = items.length <= 2 * need;
  if (whole) {
    sorted = [...items].sort(compare);
  } else {
    const keys = new Float64Array(items.length);
    for (let i = 0; i < items.length; i++) keys[i] = key(items[i]!);
    const least = keys.slice().sort()[items.length - need]!;
    sorted = items.filter((_, i) => keys[i]! >= least).sort(compare);
  }
  return (k) => {
    if (k >= sorted.length && !whole) {
      sorted = [...items].sort(compare);
      whole = true;
    }
    return sorted[k];
  };
}

/** Explains one workload (see the module comment). */
export function explainWorkload(
  trace: Trace,
  rows: readonly RowResult[],
  options: ExplainOptions = {},
): Explanation {
  const { length, kind, id, size } = trace;
  const peakAt = peakEventIndex(trace);
  const grid = gridOf(length, GRID_POINTS, peakAt);
  // A recording whose events all have one time (0 s long) is drawn on its events: seconds would
  // put every event at 0 on an axis of nothing.
  const time =
    trace.time !== undefined && length > 0 && trace.time[length - 1]! > trace.time[0]!
      ? trace.time
      : undefined;
  const origin = time ? time[0]! : 0;
  const seconds = (event: number): number | undefined =>
    time && event >= 0 && event < length ? (time[event]! - origin) / 1e6 : undefined;

  // One pass: lifetimes, live bytes and PyTorch's line, each point the largest value of the
  // interval that begins there (events grid[j] to grid[j + 1], the next excluded): the charts hold
  // a point's value until the next point, so that is where its peak happened.
  const allocEvent = new Int32Array(trace.allocCount).fill(-1);
  const freeEvent = new Int32Array(trace.allocCount).fill(-1);
  const liveMax: number[] = [];
  const recorded = trace.recordedReserved;
  const recordedMax: number[] = [];
  let live = 0;
  let windowLive = 0;
  let windowReserved = 0;
  let next = 0;
  for (let i = 0; i < length; i++) {
    const block = id[i]!;
    if (kind[i] === EventKind.Alloc) {
      allocEvent[block] = i;
      live += size[i]!;
    } else {
      freeEvent[block] = i;
      live -= size[i]!;
    }
    if (i === grid[next]) {
      if (next > 0) {
        liveMax.push(windowLive);
        if (recorded) recordedMax.push(windowReserved);
      }
      windowLive = live;
      if (recorded) windowReserved = recorded[i]!;
      next++;
    } else {
      if (live > windowLive) windowLive = live;
      if (recorded && recorded[i]! > windowReserved) windowReserved = recorded[i]!;
    }
  }
  if (next > 0) {
    liveMax.push(windowLive);
    if (recorded) recordedMax.push(windowReserved);
  }

  const allocation = (block: number): ReportAllocation => {
    const from = allocEvent[block]!;
    const to = freeEvent[block]!;
    const stack = trace.frames?.get(block);
    const allocSeconds = seconds(from);
    const freeSeconds = to >= 0 ? seconds(to) : undefined;
    return {
      id: block,
      size: size[from]!,
      allocEvent: from,
      freeEvent: to,
      ...(allocSeconds !== undefined ? { allocSeconds } : {}),
      ...(freeSeconds !== undefined ? { freeSeconds } : {}),
      stream: trace.stream ? trace.stream[from]! : 0,
      ...(stack ? { frames: stack.slice(0, REPORT_FRAMES).map(frameText) } : {}),
    };
  };

  // The timeline: the largest allocations visible at some grid point, in allocation order. Each
  // block's span of grid points, [gridFrom, gridTo); blocks come in allocation order, so the start
  // of each span moves forward with them.
  const gridFrom = new Int32Array(trace.allocCount);
  const gridTo = new Int32Array(trace.allocCount);
  const visible: number[] = [];
  let from = 0;
  for (let block = 0; block < trace.allocCount; block++) {
    const at = allocEvent[block]!;
    if (from > 0 && grid[from - 1]! >= at) from = gridIndexAtOrAfter(grid, at);
    while (from < grid.length && grid[from]! < at) from++;
    const to = freeEvent[block]! < 0 ? grid.length : gridIndexAtOrAfter(grid, freeEvent[block]!);
    gridFrom[block] = from;
    gridTo[block] = to;
    if (from < to) visible.push(block);
  }
  // The largest (the peak is often a few big, short-lived blocks) and the most memory over time
  // (size × grid points live), one of each in turn, so the band of the rest stays thin; as many as
  // TIMELINE_ALLOCATIONS and TIMELINE_BYTES of JSON allow.
  const bytesOf = (block: number) => size[allocEvent[block]!]!;
  const area = (block: number) => bytesOf(block) * (gridTo[block]! - gridFrom[block]!);
  const largest = sortedAsFarAsRead(
    visible,
    bytesOf,
    (a, b) => bytesOf(b) - bytesOf(a) || a - b,
    TIMELINE_ALLOCATIONS,
  );
  const longest = sortedAsFarAsRead(
    visible,
    area,
    (a, b) => area(b) - area(a) || a - b,
    TIMELINE_ALLOCATIONS,
  );
  const chosen = new Map<number, ReportAllocation>();
  let weight = 0;
  for (let k = 0; k < visible.length && chosen.size < TIMELINE_ALLOCATIONS; k++) {
    for (const block of [largest(k)!, longest(k)!]) {
      if (chosen.has(block) || chosen.size >= TIMELINE_ALLOCATIONS) continue;
      const shown = allocation(block);
      weight += JSON.stringify(shown).length + 16; // and its grid span
      if (weight > TIMELINE_BYTES) break;
      chosen.set(block, shown);
    }
    if (weight > TIMELINE_BYTES) break;
  }
  const drawn = [...chosen.keys()].sort((a, b) => a - b);
  const drawnLive = new Float64Array(grid.length);
  for (const block of drawn) {
    const bytes = size[allocEvent[block]!]!;
    for (let j = gridFrom[block]!; j < gridTo[block]!; j++) drawnLive[j]! += bytes;
  }
  // Exact live bytes at each grid point, for the band of the rest.
  const liveAt = new Float64Array(grid.length);
  {
    let bytes = 0;
    let j = 0;
    for (let i = 0; i < length && j < grid.length; i++) {
      bytes += kind[i] === EventKind.Alloc ? size[i]! : -size[i]!;
      if (i === grid[j]) liveAt[j++] = bytes;
    }
  }
  const timeline: Timeline = {
    allocations: drawn.map((block) => ({
      ...chosen.get(block)!,
      from: gridFrom[block]!,
      to: gridTo[block]!,
    })),
    rest: [...liveAt].map((bytes, j) => Math.max(0, bytes - drawnLive[j]!)),
    total: trace.allocCount,
  };

  // The peak: blocks live just after its event.
  const liveAtPeak: number[] = [];
  let peakLive = 0;
  for (let block = 0; block < trace.allocCount; block++) {
    const from = allocEvent[block]!;
    const to = freeEvent[block]!;
    if (from >= 0 && from <= peakAt && (to < 0 || to > peakAt)) {
      liveAtPeak.push(block);
      peakLive += size[from]!;
    }
  }
  liveAtPeak.sort((a, b) => size[allocEvent[b]!]! - size[allocEvent[a]!]! || a - b);
  const groups = new Map<number, { size: number; count: number; bytes: number }>();
  for (const block of liveAtPeak) {
    const bytes = size[allocEvent[block]!]!;
    const group = groups.get(bytes) ?? { size: bytes, count: 0, bytes: 0 };
    group.count++;
    group.bytes += bytes;
    groups.set(bytes, group);
  }
  const bySize = [...groups.values()].sort((a, b) => b.bytes - a.bytes).slice(0, 6);
  const peakSeconds = seconds(peakAt);
  const stacks = stackTreeOf(trace, liveAtPeak, (block) => size[allocEvent[block]!]!);
  const peak = {
    event: peakAt,
    ...(peakSeconds !== undefined ? { seconds: peakSeconds } : {}),
    liveBytes: peakLive,
    largest: liveAtPeak.slice(0, PEAK_TABLE_ROWS).map((block) => {
      if (trace.frames === undefined || trace.frames.size === 0) return allocation(block);
      const source = stackSource(trace.frames.get(block), block < (trace.start?.events ?? 0));
      return { ...allocation(block), source: source.text };
    }),
    bySize,
    bySource: holdersOf(trace, liveAtPeak, (block) => size[allocEvent[block]!]!),
    ...(stacks ? { stacks } : {}),
  };

  const advice = options.tuning ? adviceOf(options.tuning) : undefined;
  const diagnosis = diagnose(trace, rows, peak, bySize, advice, options);
  return {
    gridEvents: grid,
    ...(time ? { gridSeconds: grid.map((event) => seconds(event)!) } : {}),
    liveBytes: liveMax,
    ...(recorded ? { recordedReserved: recordedMax } : {}),
    ...(time ? { rowSeconds: rows.map((row) => row.series.event.map(secondsOfSample)) } : {}),
    timeline,
    peak,
    diagnosis,
    ...(advice ? { advice } : {}),
    ...(options.recordedRow !== undefined ? { recordedRow: options.recordedRow } : {}),
  };

  /** A sample's event is the position after a slice: the time of the event before it. */
  function secondsOfSample(position: number): number {
    return seconds(Math.min(length - 1, Math.max(0, position - 1))) ?? 0;
  }
}

/** Live, fragmented (free in segments with live blocks) and cached (free segments) bytes. */
export function splitReserved(view: LayoutView): {
  reserved: number;
  live: number;
  fragmented: number;
  cached: number;
} {
  let cached = 0;
  for (const segment of view.segments) {
    let used = false;
    for (let i = 2; i < segment.runs.length; i += 3) if (segment.runs[i] !== 0) used = true;
    if (!used) cached += segment.size;
  }
  const fragmented = Math.max(0, view.totalBytes - view.liveBytes - cached);
  return { reserved: view.totalBytes, live: view.liveBytes, fragmented, cached };
}

function at(secondsValue: number | undefined, event: number): string {
  return secondsValue !== undefined
    ? `${formatSeconds(secondsValue)} (event ${formatCount(event)})`
    : `event ${formatCount(event)}`;
}

/** How a workload of its kind keeps fewer bytes live, for the action ('' when it is not a model's). */
function fewerLive(meta: Trace['meta']): string {
  if (meta.generator === 'trainingLoop') return ' (smaller batches, activation checkpointing)';
  if (meta.generator === 'inferenceServing') return ' (fewer requests at once, shorter KV caches)';
  if (isPyTorchTrace(meta)) return ' (smaller batches; in training, activation checkpointing)';
  return '';
}

function diagnose(
  trace: Trace,
  rows: readonly RowResult[],
  peak: Explanation['peak'],
  bySize: Explanation['peak']['bySize'],
  advice: Advice | undefined,
  options: ExplainOptions,
): Diagnosis {
  const reference =
    rows.find((row) => row.allocator === options.recordedRow) ??
    rows.find((row) => row.allocator === 'caching' && row.failures === 0) ??
    rows.reduce<RowResult | undefined>(
      (a, b) => (a === undefined || b.failures < a.failures ? b : a),
      undefined,
    );
  const split = reference
    ? splitReserved(reference.layoutAtPeak)
    : { reserved: 0, live: 0, fragmented: 0, cached: 0 };
  const share = (bytes: number) =>
    split.reserved > 0 ? ` (${formatPercent(bytes / split.reserved, 0)})` : '';
  const rounding = Math.max(0, split.live - peak.liveBytes);
  const splitText = reference
    ? `At the peak of live bytes, ${reference.allocator} held ${formatBytes(split.reserved)}: ` +
      `${formatBytes(split.live)}${share(split.live)} live` +
      (rounding > 0 ? `, ${formatBytes(rounding)} of it rounding above the requests` : '') +
      `; ${formatBytes(split.fragmented)}${share(split.fragmented)} free but fragmented, ` +
      'in segments that also hold live blocks, so only a request that fits a gap can use it and empty_cache() cannot release it; ' +
      `and ${formatBytes(split.cached)}${share(split.cached)} cached and reusable, in whole free segments. ` +
      `Its peak reserved was ${formatBytes(reference.peakReservedBytes)}, ${formatRatio(reference.ratio)} the peak live bytes.` +
      (options.recordedPeakReservedBytes !== undefined
        ? ` PyTorch recorded a peak of ${formatBytes(options.recordedPeakReservedBytes)} reserved, ` +
          `${formatBytes(Math.max(0, options.recordedPeakReservedBytes - peak.liveBytes))} above the peak live bytes.`
        : '')
    : 'No allocator ran.';

  const biggest = bySize
    .slice(0, 3)
    .map(
      (group) =>
        `${formatCount(group.count)} × ${formatBytes(group.size)} (${formatBytes(group.bytes)})`,
    )
    .join(', ');
  let peakText =
    peak.event >= 0
      ? `Live bytes peaked at ${formatBytes(peak.liveBytes)} at ${at(peak.seconds, peak.event)}, ` +
        `when a ${formatBytes(trace.size[peak.event]!)} allocation arrived. ` +
        `The sizes holding most of it then: ${biggest}.`
      : 'The trace allocates nothing.';
  const recorded = trace.recordedReserved;
  if (recorded && recorded.length > 0) {
    let top = 0;
    for (let i = 1; i < recorded.length; i++) if (recorded[i]! > recorded[top]!) top = i;
    const segment = trace.recordedSegments
      ?.filter((s) => s.event <= top)
      .reduce<{ event: number; size: number } | undefined>((_, s) => s, undefined);
    // Times only where the peak has one (none for a recording 0 s long).
    const time =
      trace.time && peak.seconds !== undefined
        ? (trace.time[top]! - trace.time[0]!) / 1e6
        : undefined;
    peakText +=
      ` PyTorch's reserved bytes reached their peak of ${formatBytes(recorded[top]!)} at ${at(time, top)}` +
      (segment && segment.event < trace.length
        ? `, after a ${formatBytes(segment.size)} segment was allocated for a ${formatBytes(trace.size[segment.event]!)} request.`
        : '.');
  }

  const adviceText = advice ? adviceParagraph(advice) : undefined;

  let action: string;
  if (advice && advice.config !== null && advice.config !== '') {
    action =
      advice.reason === 'fewer-failures'
        ? `Set PYTORCH_CUDA_ALLOC_CONF=${advice.config}: with it no allocation fails on this card.`
        : `Set PYTORCH_CUDA_ALLOC_CONF=${advice.config} to save about ${formatBytes(advice.savingBytes)} of peak reserved memory.`;
  } else if (advice && advice.config === null) {
    action = `${advice.headline}: ${advice.summary}`;
  } else if (split.reserved > 0 && split.fragmented > 0.25 * split.reserved) {
    // With the tuner's search, a setting it found no better is not suggested.
    action = advice
      ? `Fragmentation holds ${formatBytes(split.fragmented)}, but no setting the tuner tried lowers the peak (see its advice): free the ${formatBytes(bySize[0]?.size ?? 0)} blocks sooner.`
      : `Fragmentation holds ${formatBytes(split.fragmented)}: try expandable_segments:True, or free the ${formatBytes(bySize[0]?.size ?? 0)} blocks sooner.`;
  } else if (split.reserved > 0 && split.live >= 0.75 * split.reserved) {
    action =
      `Reserved memory is mostly live data: to lower the peak, keep fewer of the ${formatBytes(bySize[0]?.size ?? 0)} ` +
      `allocations live at ${at(peak.seconds, peak.event)}${fewerLive(trace.meta)}.`;
  } else if (advice) {
    action = `${advice.headline}. ${advice.because}`;
  } else {
    const usable = usableRows(trace.meta, rows).filter(
      (row) => row.failures === 0 && Number.isFinite(row.ratio),
    );
    const best = usable.reduce<RowResult | undefined>(
      (a, b) => (a === undefined || b.ratio < a.ratio ? b : a),
      undefined,
    );
    action = best
      ? `${best.allocator} reserves least here: ${formatRatio(best.ratio)} the peak live bytes.`
      : 'Every allocator failed allocations: give them more capacity.';
  }
  return {
    row: reference?.allocator ?? '',
    reservedBytes: split.reserved,
    liveBytes: split.live,
    fragmentedBytes: split.fragmented,
    cachedBytes: split.cached,
    split: splitText,
    peak: peakText,
    ...(adviceText !== undefined ? { advice: adviceText } : {}),
    action,
  };
}
