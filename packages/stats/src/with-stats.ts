/**
 * withStats: an adaptor (RMM's `statistics_resource_adaptor`, PyTorch's allocator statistics) that
 * counts what passes through it and explains failures.
 *
 * ```
 *   caller ──► StatsAllocator ──► upstream (any allocator)
 *                │  counters (Float64Array), live table (address → requested, usable)
 *                │  size histogram, scopes (push/pop), OOM observers
 *                └─ optional trace ring buffer, fed also by a pool's StatsSink
 * ```
 *
 * Hot path: `allocate` adds one `usableSize` call, one hash-table insert and a dozen numeric
 * stores; `free` one hash-table lookup and removal and three stores (`freed` is derived). Nothing is allocated per call while tracing is
 * off. Failures are counted cheaply; a diagnosis (a layout walk) is computed only when someone
 * listens (an OOM observer, the trace, or `allocateOrThrow`).
 *
 * Blocks the upstream issued before it was wrapped can be freed through the adaptor; they are not
 * counted, because their requested size was never seen.
 */
import type { Adaptor, Allocator, Layout, Usage } from '@allot/core';
import {
  ALLOCATED,
  ALLOCATED_BYTES,
  ALLOCATIONS,
  type Counters,
  CURRENT,
  FAILURES,
  foldInto,
  newCounterArray,
  PEAK,
  REQUESTED_BYTES,
  readCounters,
  resetAccumulated,
  resetPeaks,
} from './counters';
import { diagnose, errorFromDiagnosis, type OutOfMemoryDiagnosis } from './diagnose';
import { type FragmentationFigures, fragmentation } from './fragmentation';
import { LiveTable } from './live-table';
import {
  findPoolStatsSource,
  type PoolLayoutSegment,
  type PoolStatsSource,
  type StatsSink,
} from './pool-stats';
import { HISTOGRAM_BUCKETS, readHistogram, type SizeHistogram, sizeBucket } from './size-histogram';
import type { MemorySnapshot, SnapshotBlock, SnapshotSegment } from './snapshot';
import {
  type AnnotationStage,
  EventKind,
  TraceBuffer,
  type TraceEvent,
  type TraceOptions,
} from './trace-buffer';

/** Options of {@link withStats}. */
export interface WithStatsOptions {
  /** Record a trace of events from the start (`true` for the defaults). @defaultValue false */
  readonly trace?: boolean | TraceOptions;
  /** Device index written into exported snapshots. @defaultValue 0 */
  readonly device?: number;
}

/** Receives the diagnosis of every failed allocation. */
export type OutOfMemoryObserver = (diagnosis: OutOfMemoryDiagnosis) => void;

/** Wraps `allocator` in a {@link StatsAllocator}. */
export function withStats<Upstream extends Allocator>(
  allocator: Upstream,
  options: WithStatsOptions = {},
): StatsAllocator<Upstream> {
  return new StatsAllocator(allocator, options);
}

/** The adaptor {@link withStats} returns. */
export class StatsAllocator<Upstream extends Allocator = Allocator> implements Adaptor<Upstream> {
  readonly upstream: Upstream;
  readonly alignment: number;
  /** Device index written into exported snapshots. */
  readonly device: number;
  /** The pool in the upstream chain that reports its own figures, if any. */
  readonly poolSource: PoolStatsSource | undefined;
  /** The upstream's layout walk, passed through (absent when the upstream has none). */
  readonly layout?: () => Layout;

  private counters: Float64Array = newCounterArray();
  private readonly scopes: Float64Array[] = [];
  private readonly live = new LiveTable();
  private readonly histogramCounts = new Float64Array(HISTOGRAM_BUCKETS);
  private readonly histogramBytes = new Float64Array(HISTOGRAM_BUCKETS);
  private tracer: TraceBuffer | null = null;
  private blockStacks: Map<number, string> | null = null;
  private readonly observers: OutOfMemoryObserver[] = [];
  private readonly deferredFreeKind: EventKind;
  private readonly detachSink: (() => void) | undefined;
  private pendingDiagnosis: OutOfMemoryDiagnosis | null = null;
  private peakEpochValue = 0;
  private accumulatedEpochValue = 0;

  constructor(upstream: Upstream, options: WithStatsOptions = {}) {
    this.upstream = upstream;
    this.alignment = upstream.alignment;
    this.device = options.device ?? 0;
    if (typeof upstream.layout === 'function') this.layout = () => upstream.layout!();
    this.poolSource = findPoolStatsSource(upstream);
    this.deferredFreeKind = this.poolSource?.defersFrees ? EventKind.FreeRequested : EventKind.Free;
    if (options.trace) this.recordHistory(options.trace === true ? {} : options.trace);
    const sink: StatsSink = {
      segmentAlloc: (address, size, stream = 0) =>
        this.tracer?.record(EventKind.SegmentAlloc, address, size, stream),
      segmentFree: (address, size, stream = 0) =>
        this.tracer?.record(EventKind.SegmentFree, address, size, stream),
      freeCompleted: (address, size, stream = 0) =>
        this.tracer?.record(EventKind.FreeCompleted, address, size, stream),
    };
    this.detachSink = this.poolSource?.attachStatsSink?.(sink);
  }

  // ── the Allocator contract ────────────────────────────────────────────────────────────────

  allocate(size: number, alignment?: number): number | null {
    const upstream = this.upstream;
    const address = upstream.allocate(size, alignment);
    if (address === null) return this.failed(size, alignment);
    const usable = upstream.usableSize(address);
    this.live.insert(address, size, usable);
    const c = this.counters;
    const requested = c[REQUESTED_BYTES + CURRENT]! + size;
    c[REQUESTED_BYTES + CURRENT] = requested;
    c[REQUESTED_BYTES + ALLOCATED]! += size;
    if (requested > c[REQUESTED_BYTES + PEAK]!) c[REQUESTED_BYTES + PEAK] = requested;
    const bytes = c[ALLOCATED_BYTES + CURRENT]! + usable;
    c[ALLOCATED_BYTES + CURRENT] = bytes;
    c[ALLOCATED_BYTES + ALLOCATED]! += usable;
    if (bytes > c[ALLOCATED_BYTES + PEAK]!) c[ALLOCATED_BYTES + PEAK] = bytes;
    const count = c[ALLOCATIONS + CURRENT]! + 1;
    c[ALLOCATIONS + CURRENT] = count;
    c[ALLOCATIONS + ALLOCATED]! += 1;
    if (count > c[ALLOCATIONS + PEAK]!) c[ALLOCATIONS + PEAK] = count;
    // sizeBucket, by hand for sizes in (1, 2^32]: ceil(log2(size)) from the leading zeros.
    const bucket = size > 1 && size <= 4294967296 ? 32 - Math.clz32(size - 1) : sizeBucket(size);
    this.histogramCounts[bucket]! += 1;
    this.histogramBytes[bucket]! += size;
    if (this.tracer !== null) this.traceAlloc(address, usable);
    return address;
  }

  free(address: number): void {
    const live = this.live;
    const slot = live.take(address);
    if (slot < 0) {
      this.upstream.free(address); // throws on misuse; a block from before this adaptor just goes
      return;
    }
    const requested = live.requestedAt(slot);
    const usable = live.usableAt(slot);
    // Record the request before the upstream acts, so a pool that completes the free at once
    // (and reports free_completed through its sink) appears after it in the trace.
    if (this.tracer !== null) this.traceFree(address, usable);
    try {
      this.upstream.free(address);
    } catch (error) {
      // Rejected: the block is still live, here as upstream.
      live.restore(address, slot);
      throw error;
    }
    live.recycle(slot);
    // `freed` follows from `allocated − current` (see counters.ts): only `current` moves.
    const c = this.counters;
    c[REQUESTED_BYTES + CURRENT]! -= requested;
    c[ALLOCATED_BYTES + CURRENT]! -= usable;
    c[ALLOCATIONS + CURRENT]! -= 1;
  }

  usableSize(address: number): number {
    return this.upstream.usableSize(address);
  }

  owns(address: number): boolean {
    return this.upstream.owns(address);
  }

  usage(): Usage {
    return this.upstream.usage();
  }

  /** Resets the upstream; every live block counts as freed. Peaks and the histogram stay. */
  reset(): void {
    this.upstream.reset();
    const totals = this.foldedCounters();
    const c = this.counters;
    // Lowering `current` raises `freed` (derived as `allocated − current + base`) by as much.
    for (const slot of [REQUESTED_BYTES, ALLOCATED_BYTES, ALLOCATIONS]) {
      c[slot + CURRENT]! -= totals[slot + CURRENT]!;
    }
    if (this.tracer !== null) {
      const tracer = this.tracer;
      this.live.forEach((address, _requested, usable) => {
        tracer.record(EventKind.Free, address, usable, 0);
      });
    }
    this.live.clear();
    this.blockStacks?.clear();
  }

  // ── counters ──────────────────────────────────────────────────────────────────────────────

  /** Counters of the innermost scope (the whole lifetime when no scope is open). */
  scopeCounters(): Counters {
    return readCounters(this.counters);
  }

  /** Counters over the whole lifetime, every open scope folded in. */
  totals(): Counters {
    return readCounters(this.foldedCounters());
  }

  /** Sets every peak to its current value (in every open scope), like `reset_peak_memory_stats`. */
  resetPeak(): void {
    resetPeaks([...this.scopes, this.counters]);
    this.peakEpochValue++;
  }

  /** Zeroes the cumulative figures (`allocated`, `freed`) in every scope and the size histogram. */
  resetAccumulated(): void {
    resetAccumulated(this.counters);
    for (const scope of this.scopes) resetAccumulated(scope);
    this.histogramCounts.fill(0);
    this.histogramBytes.fill(0);
    this.accumulatedEpochValue++;
  }

  /**
   * Opens a measurement scope: counters start from zero until the matching {@link pop}
   * (RMM's `push_counters`). Returns the new depth.
   */
  push(): number {
    this.scopes.push(this.counters);
    this.counters = newCounterArray();
    return this.scopes.length;
  }

  /**
   * Closes the innermost scope, folds it into its parent (RMM's `pop_counters`) and returns what
   * it measured. Peaks of a scope are relative to the scope's start.
   * @throws RangeError when no scope is open.
   */
  pop(): Counters {
    const parent = this.scopes.pop();
    if (parent === undefined) throw new RangeError('pop() without a matching push()');
    const child = this.counters;
    foldInto(parent, child);
    this.counters = parent;
    return readCounters(child);
  }

  /** Open scopes. */
  get depth(): number {
    return this.scopes.length;
  }

  /** Runs `body` inside a scope and returns its result with what the scope measured. */
  measure<T>(body: () => T): { readonly result: T; readonly counters: Counters } {
    const depth = this.push();
    try {
      const result = body();
      return { result, counters: this.pop() };
    } finally {
      if (this.scopes.length === depth) this.pop();
    }
  }

  /** Histogram of successful request sizes since the last `resetAccumulated()`. */
  sizeHistogram(): SizeHistogram {
    return readHistogram(this.histogramCounts, this.histogramBytes);
  }

  /** Fragmentation figures of the upstream's layout, or `undefined` without a layout walk. */
  fragmentation(): FragmentationFigures | undefined {
    const layout = this.layout?.();
    return layout ? fragmentation(layout) : undefined;
  }

  /** Incremented by `resetPeak()`; lets derived samplers reset their own peaks. */
  get peakEpoch(): number {
    return this.peakEpochValue;
  }

  /** Incremented by `resetAccumulated()`. */
  get accumulatedEpoch(): number {
    return this.accumulatedEpochValue;
  }

  // ── out of memory ─────────────────────────────────────────────────────────────────────────

  /** Calls `observer` with the diagnosis of every failed allocation. Returns an unsubscribe function. */
  onOutOfMemory(observer: OutOfMemoryObserver): () => void {
    this.observers.push(observer);
    return () => {
      const i = this.observers.indexOf(observer);
      if (i >= 0) this.observers.splice(i, 1);
    };
  }

  /** Diagnoses a request of `size` bytes at `alignment` against the upstream as it is now. */
  diagnose(size: number, alignment?: number): OutOfMemoryDiagnosis {
    return diagnose(this.upstream, size, alignment);
  }

  /**
   * Like {@link allocate}, but a failure throws `OutOfMemoryError` whose `diagnosis` says why.
   * @throws OutOfMemoryError when nothing fits.
   */
  allocateOrThrow(size: number, alignment?: number): number {
    this.pendingDiagnosis = null;
    const address = this.allocate(size, alignment);
    if (address !== null) return address;
    const diagnosis = this.pendingDiagnosis ?? this.diagnose(size, alignment);
    this.pendingDiagnosis = null;
    throw errorFromDiagnosis(diagnosis);
  }

  private failed(size: number, alignment: number | undefined): null {
    const c = this.counters;
    const v = (c[FAILURES + CURRENT]! += 1);
    if (v > c[FAILURES + PEAK]!) c[FAILURES + PEAK] = v;
    c[FAILURES + ALLOCATED]! += 1;
    if (this.observers.length === 0 && this.tracer === null) return null;
    const diagnosis = this.diagnose(size, alignment);
    this.pendingDiagnosis = diagnosis;
    this.tracer?.record(EventKind.Oom, diagnosis.freeBytes, size, 0);
    let failure: { error: unknown } | undefined;
    for (const observer of [...this.observers]) {
      try {
        observer(diagnosis);
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error; // after every observer ran; counters are already updated
    return null;
  }

  // ── trace and snapshot ────────────────────────────────────────────────────────────────────

  /**
   * Starts recording events (a fresh buffer), or stops with `false` (PyTorch's
   * `_record_memory_history`). Stopping forgets the recorded events.
   */
  recordHistory(options: TraceOptions | false): void {
    if (options === false) {
      this.tracer = null;
      this.blockStacks = null;
      return;
    }
    this.tracer = new TraceBuffer(options);
    this.blockStacks = this.tracer.stacks ? new Map() : null;
  }

  /** Whether events are being recorded. */
  get tracing(): boolean {
    return this.tracer !== null;
  }

  /** Recorded events, oldest first (empty when tracing is off). */
  trace(): TraceEvent[] {
    return this.tracer?.events() ?? [];
  }

  /** Events overwritten because the trace buffer was full. */
  get droppedEvents(): number {
    return this.tracer?.dropped ?? 0;
  }

  /** Adds a user annotation to the trace (ignored while tracing is off). */
  annotate(name: string, stage: AnnotationStage = 'MARK'): void {
    this.tracer?.annotate(name, stage);
  }

  private traceFree(address: number, usable: number): void {
    this.tracer!.record(this.deferredFreeKind, address, usable, 0);
    this.blockStacks?.delete(address);
  }

  private traceAlloc(address: number, usable: number): void {
    const tracer = this.tracer!;
    if (this.blockStacks !== null) {
      const stack = new Error().stack ?? '';
      this.blockStacks.set(address, stack);
      tracer.record(EventKind.Alloc, address, usable, 0, stack);
    } else {
      tracer.record(EventKind.Alloc, address, usable, 0);
    }
  }

  /**
   * Segments and blocks from the upstream's layout (none without a layout walk), the trace so far
   * and the counters; records a `snapshot` event.
   */
  snapshot(): MemorySnapshot {
    this.tracer?.record(EventKind.Snapshot, 0, 0, 0);
    const layout = this.layout?.();
    const segments: SnapshotSegment[] = [];
    for (const segment of (layout?.segments ?? []) as readonly PoolLayoutSegment[]) {
      const blocks: SnapshotBlock[] = [];
      for (const block of segment.blocks) {
        if (block.free) {
          blocks.push({
            address: block.address,
            size: block.size,
            requestedSize: 0,
            state: 'inactive',
          });
          continue;
        }
        const slot = this.live.find(block.address);
        const requestedSize =
          block.requestedSize ?? (slot >= 0 ? this.live.requestedAt(slot) : block.size);
        const stack = this.blockStacks?.get(block.address);
        blocks.push({
          address: block.address,
          size: block.size,
          requestedSize,
          state: block.pendingFree ? 'active_pending_free' : 'active_allocated',
          ...(stack === undefined ? {} : { stack }),
        });
      }
      segments.push({
        address: segment.address,
        size: segment.size,
        ...(segment.pool === undefined ? {} : { pool: segment.pool }),
        stream: segment.stream ?? 0,
        expandable: segment.expandable ?? false,
        blocks,
      });
    }
    const settings = this.poolSource?.poolStats().allocatorSettings;
    return {
      time: performance.timeOrigin + performance.now(),
      device: this.device,
      segments,
      trace: this.trace(),
      counters: this.totals(),
      usage: this.usage(),
      ...(settings === undefined ? {} : { allocatorSettings: settings }),
    };
  }

  /** Disconnects from the pool's event sink (if one was attached). */
  detach(): void {
    this.detachSink?.();
  }

  private foldedCounters(): Float64Array {
    if (this.scopes.length === 0) return this.counters.slice();
    const folded = this.scopes[0]!.slice();
    for (let i = 1; i < this.scopes.length; i++) foldInto(folded, this.scopes[i]!);
    foldInto(folded, this.counters);
    return folded;
  }
}
