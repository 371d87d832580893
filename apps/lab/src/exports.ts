/**
 * `--export`: each allocator row's state at the peak of live bytes, in files other tools open.
 *
 * ```
 *  replay the row to the event of peak live bytes, one event at a time, noting each block's address
 *  memory-viz  DIR/exports/<trace>.<row>.pickle    PyTorch snapshot: segments and blocks at the peak,
 *                                                   and the trace up to it (alloc, free_requested,
 *                                                   free_completed at the row's own addresses, with
 *                                                   the recording's times and frames; a pool's
 *                                                   segment_alloc and segment_free, or for expandable
 *                                                   segments segment_map and segment_unmap, where it
 *                                                   made them), and the pool's own settings: drop it
 *                                                   on https://pytorch.org/memory_viz, or replay it.
 *                                                   Its blocks tile each segment (gaps become inactive
 *                                                   blocks), as memory_viz places each after the one
 *                                                   before
 *  vma         DIR/exports/<trace>.<row>.vma.json  VMA JSON dump of the same layout (GpuMemDumpVis)
 * ```
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Layout } from '@allot/core';
import {
  DEFAULT_ALLOCATOR_SETTINGS,
  type PickleValue,
  pickleFloat,
  pickleTuple,
  type TorchBlock,
  type TorchSegment,
  type TorchSnapshot,
  type TorchTraceEntry,
  toTorchSnapshotPickle,
  toVmaDump,
} from '@allot/stats';
import { EventKind, type StackFrame, type Trace } from '@allot/workloads';
import type { DeviceModel } from './analysis/device';
import { peakEventIndex } from './analysis/measure';
import type { PoolInstance } from './analysis/pool-instance';
import { type LabRow, profileOf } from './analysis/registry';
import { beginReplay } from './analysis/row-instance';
import type { ExportFormat } from './options';

/** Most trace entries written per snapshot, the latest kept (as PyTorch's `max_entries`). */
export const MAX_EXPORT_ENTRIES = 100_000;

/** A row's layout at the peak and the snapshot trace that led to it. */
export interface PeakState {
  readonly layout: Layout;
  readonly entries: TorchTraceEntry[];
  /** Requested bytes of each live block, by address. */
  readonly requested: ReadonlyMap<number, number>;
  /** Stack frames of each live block, by address, when the trace has them. */
  readonly frames: ReadonlyMap<number, readonly StackFrame[]>;
  /** A pool's `allocator_settings`, under PyTorch's keys. */
  readonly allocatorSettings?: Readonly<Record<string, PickleValue>>;
  /** Whether a pool's segments are expandable. */
  readonly expandable?: boolean;
}

/** A segment as a replay's segment events see it: its address and size. */
type Span = readonly [address: number, size: number];

/**
 * The segment events between two layouts of a pool: plain segments given back (`segment_free`) and
 * acquired (`segment_alloc`); for expandable segments, which a layout shows as their mapped runs,
 * the bytes unmapped (`segment_unmap`) and mapped (`segment_map`).
 */
function segmentEvents(
  before: readonly Span[],
  after: readonly Span[],
  expandable: boolean,
): { action: 'segment_alloc' | 'segment_free' | 'segment_map' | 'segment_unmap'; span: Span }[] {
  const minus = (a: readonly Span[], b: readonly Span[]): Span[] => {
    if (!expandable) {
      const keys = new Set(b.map(([address, size]) => `${address}/${size}`));
      return a.filter(([address, size]) => !keys.has(`${address}/${size}`));
    }
    // Byte ranges of a not covered by b (both sorted, neither overlapping itself).
    const out: Span[] = [];
    for (const [address, size] of a) {
      let from = address;
      const end = address + size;
      for (const [other, otherSize] of b) {
        if (other + otherSize <= from || other >= end) continue;
        if (other > from) out.push([from, other - from]);
        from = Math.max(from, other + otherSize);
      }
      if (from < end) out.push([from, end - from]);
    }
    return out;
  };
  const [gone, come] = expandable
    ? ['segment_unmap', 'segment_map']
    : ['segment_free', 'segment_alloc'];
  return [
    ...minus(before, after).map((span) => ({ action: gone as 'segment_free', span })),
    ...minus(after, before).map((span) => ({ action: come as 'segment_alloc', span })),
  ];
}

function spansOf(layout: Layout): Span[] {
  return layout.segments
    .map((segment): Span => [segment.address, segment.size])
    .sort((a, b) => a[0] - b[0]);
}

/** A pool's settings as PyTorch's snapshot writes them (the threshold a Python float). */
function torchSettings(pool: PoolInstance['pool']): Readonly<Record<string, PickleValue>> {
  const settings = pool.poolStats().allocatorSettings ?? DEFAULT_ALLOCATOR_SETTINGS;
  const threshold = settings.garbage_collection_threshold;
  return typeof threshold === 'number'
    ? { ...settings, garbage_collection_threshold: pickleFloat(threshold) }
    : settings;
}

/** Replays `row` on `trace` up to the event of peak live bytes (see the module comment). */
export function peakState(
  trace: Trace,
  row: LabRow,
  capacity: number | null,
  device?: DeviceModel,
): PeakState {
  const instance = row.create(trace, profileOf(trace), capacity, device);
  const state = beginReplay(instance, trace);
  const peakAt = peakEventIndex(trace);
  const addressOf = Float64Array.from(state.addresses);
  const entries: TorchTraceEntry[] = [];
  const timeOf = (i: number) => (trace.time ? Math.round(trace.time[i]!) : i);
  // A pool's segment decisions, seen as changes of its source's counters, then of its layout.
  const { pool, source } = instance as Partial<PoolInstance>;
  const expandable = pool?.settings.expandableSegments ?? false;
  let spans = source ? spansOf(instance.layout(state)) : [];
  let decisions = source?.decisions().length ?? 0;
  let releases = source?.releaseCount ?? 0;
  for (let i = state.position; i <= peakAt; i++) {
    state.run(i + 1);
    if (source && (source.decisions().length !== decisions || source.releaseCount !== releases)) {
      decisions = source.decisions().length;
      releases = source.releaseCount;
      const next = spansOf(instance.layout(state));
      for (const { action, span } of segmentEvents(spans, next, expandable)) {
        entries.push({ action, addr: span[0], size: span[1], stream: 0, time_us: timeOf(i) });
      }
      spans = next;
    }
    const block = trace.id[i]!;
    const size = trace.size[i]!;
    if (trace.kind[i] === EventKind.Alloc) {
      const address = state.addresses[block]!;
      addressOf[block] = address;
      if (address < 0) continue; // failed: nothing to show
      const frames = trace.frames?.get(block);
      entries.push({
        action: 'alloc',
        addr: address,
        size,
        stream: trace.stream ? trace.stream[i]! : 0,
        time_us: timeOf(i),
        ...(frames ? { frames } : {}),
      });
    } else {
      const address = addressOf[block]!;
      if (address < 0) continue;
      const entry = { addr: address, size, stream: 0, time_us: timeOf(i) };
      entries.push({ action: 'free_requested', ...entry }, { action: 'free_completed', ...entry });
    }
  }
  const requestedOf = new Float64Array(trace.allocCount);
  for (let i = 0; i <= peakAt; i++) {
    if (trace.kind[i] === EventKind.Alloc) requestedOf[trace.id[i]!] = trace.size[i]!;
  }
  const requested = new Map<number, number>();
  const frames = new Map<number, readonly StackFrame[]>();
  for (let block = 0; block < trace.allocCount; block++) {
    const address = state.addresses[block]!;
    if (address < 0) continue;
    requested.set(address, requestedOf[block]!);
    const stack = trace.frames?.get(block);
    if (stack) frames.set(address, stack);
  }
  const layout = instance.layout(state);
  instance.reset();
  return {
    layout,
    entries: entries.slice(-MAX_EXPORT_ENTRIES),
    requested,
    frames,
    ...(pool !== undefined ? { allocatorSettings: torchSettings(pool), expandable } : {}),
  };
}

/** The PyTorch snapshot dictionary of a peak state. */
export function torchSnapshotOf(peak: PeakState): TorchSnapshot {
  const segments: TorchSegment[] = peak.layout.segments.map((segment) => {
    let allocated = 0;
    let requestedBytes = 0;
    // memory_viz places each block at the end of the one before it: gaps become inactive blocks.
    const blocks: TorchBlock[] = [];
    const gap = (address: number, size: number) =>
      blocks.push({ address, size, requested_size: 0, state: 'inactive', frames: [] });
    let cursor = segment.address;
    for (const block of segment.blocks) {
      if (block.address > cursor) gap(cursor, block.address - cursor);
      cursor = Math.max(cursor, block.address + block.size);
      const requested = block.free
        ? 0
        : (block.requestedSize ?? peak.requested.get(block.address) ?? block.size);
      if (!block.free) {
        allocated += block.size;
        requestedBytes += requested;
      }
      blocks.push({
        address: block.address,
        size: block.size,
        requested_size: requested,
        state: block.free ? 'inactive' : 'active_allocated',
        frames: block.free ? [] : (peak.frames.get(block.address) ?? []),
      });
    }
    if (cursor < segment.address + segment.size)
      gap(cursor, segment.address + segment.size - cursor);
    return {
      device: 0,
      address: segment.address,
      total_size: segment.size,
      allocated_size: allocated,
      active_size: allocated,
      requested_size: requestedBytes,
      stream: 0,
      segment_type: segment.pool !== undefined && /small/i.test(segment.pool) ? 'small' : 'large',
      segment_pool_id: pickleTuple(0, 0),
      is_expandable: peak.expandable ?? false,
      frames: [],
      blocks,
    };
  });
  return {
    segments,
    device_traces: [peak.entries],
    allocator_settings: peak.allocatorSettings ?? DEFAULT_ALLOCATOR_SETTINGS,
    external_annotations: [],
  };
}

/** A name safe in a file name. */
function slug(text: string): string {
  return text.replace(/[^A-Za-z0-9._+-]+/g, '_').replace(/^_+|_+$/g, '') || 'trace';
}

/** One workload to export: its trace and every row it ran. */
export interface ExportInput {
  readonly id: string;
  readonly trace: Trace;
  readonly rows: readonly LabRow[];
}

/** Writes the `formats` of every row of every input under `folder/exports`; returns the paths. */
export function writeExports(
  inputs: readonly ExportInput[],
  formats: readonly ExportFormat[],
  folder: string,
  capacity: number | null,
  device?: DeviceModel,
): string[] {
  if (formats.length === 0) return [];
  const out = join(folder, 'exports');
  mkdirSync(out, { recursive: true });
  const paths: string[] = [];
  for (const input of inputs) {
    for (const row of input.rows) {
      const peak = peakState(input.trace, row, capacity, device);
      const base = join(out, `${slug(input.id)}.${slug(row.name)}`);
      if (formats.includes('memory-viz')) {
        writeFileSync(`${base}.pickle`, toTorchSnapshotPickle(torchSnapshotOf(peak)));
        paths.push(`${base}.pickle`);
      }
      if (formats.includes('vma')) {
        const dump = toVmaDump(peak.layout, { gpu: `allot ${row.name}` });
        writeFileSync(`${base}.vma.json`, `${JSON.stringify(dump, null, 1)}\n`);
        paths.push(`${base}.vma.json`);
      }
    }
  }
  return paths;
}
