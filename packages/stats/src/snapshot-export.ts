/**
 * Export in PyTorch's memory snapshot format (`torch.cuda.memory._snapshot()`), the dictionary that
 * `torch.cuda.memory._dump_snapshot()` pickles and https://pytorch.org/memory_viz opens:
 *
 * ```
 * { segments: [{ device, address, total_size, allocated_size, active_size, requested_size,
 *                stream, segment_type, segment_pool_id, is_expandable, frames,
 *                blocks: [{ address, size, requested_size, state, frames }] }],
 *   device_traces: [[{ action, addr, size, stream, time_us, frames? }]],   // one list per device
 *   allocator_settings: { PYTORCH_CUDA_ALLOC_CONF, max_split_size, ... },
 *   external_annotations: [{ device, stage, name, time_us }] }
 * ```
 *
 * memory_viz finds a block's address by adding the sizes of the blocks before it to the segment's
 * address, so blocks must tile their segment: bytes a strategy keeps for itself (gaps in its layout)
 * are exported as `inactive` blocks. An `oom` entry carries `device_free` instead of `addr`, as in
 * PyTorch. Annotations go into `external_annotations` so that the viewer's event list stays clean.
 */

import {
  PickleFloat,
  PickleTuple,
  type PickleValue,
  pickle,
  pickleFloat,
  pickleTuple,
} from '@allot/pickle';
import type { BlockState, MemorySnapshot, SnapshotBlock } from './snapshot';
import type { StackFrame } from './stack-frames';
import { parseStack } from './stack-frames';
import type { StatsAllocator } from './with-stats';

export interface TorchBlock {
  readonly address: number;
  readonly size: number;
  readonly requested_size: number;
  readonly state: BlockState;
  readonly frames: readonly StackFrame[];
}

export interface TorchSegment {
  readonly device: number;
  readonly address: number;
  readonly total_size: number;
  /** Bytes of `active_allocated` blocks. */
  readonly allocated_size: number;
  /** Bytes of `active_allocated` and `active_pending_free` blocks. */
  readonly active_size: number;
  readonly requested_size: number;
  readonly stream: number;
  readonly segment_type: 'small' | 'large';
  readonly segment_pool_id: PickleTuple;
  readonly is_expandable: boolean;
  readonly frames: readonly StackFrame[];
  readonly blocks: readonly TorchBlock[];
}

export type TorchTraceAction =
  | 'alloc'
  | 'free_requested'
  | 'free_completed'
  | 'segment_alloc'
  | 'segment_free'
  /** Pages of an expandable segment mapped, and unmapped (`expandable_segments:True`). */
  | 'segment_map'
  | 'segment_unmap'
  | 'oom'
  | 'snapshot';

export interface TorchTraceEntry {
  readonly action: TorchTraceAction;
  /** Block or segment address (absent for `oom`). */
  readonly addr?: number;
  /** For `oom`: bytes free on the device. */
  readonly device_free?: number;
  readonly size: number;
  readonly stream: number;
  /** Microseconds since the Unix epoch. */
  readonly time_us: number;
  readonly frames?: readonly StackFrame[];
}

export interface TorchAnnotation {
  readonly device: number;
  readonly stage: string;
  readonly name: string;
  readonly time_us: number;
}

/** The snapshot dictionary. */
export interface TorchSnapshot {
  readonly segments: readonly TorchSegment[];
  readonly device_traces: readonly (readonly TorchTraceEntry[])[];
  readonly allocator_settings: Readonly<Record<string, PickleValue>>;
  readonly external_annotations: readonly TorchAnnotation[];
}

/**
 * Settings reported for an allocator that has none of PyTorch's knobs: PyTorch's defaults
 * (`max_split_size` -1 is its "no limit", SIZE_MAX written as a signed 64-bit integer).
 */
export const DEFAULT_ALLOCATOR_SETTINGS: Readonly<Record<string, PickleValue>> = {
  PYTORCH_CUDA_ALLOC_CONF: '',
  max_split_size: -1,
  garbage_collection_threshold: pickleFloat(0),
  expandable_segments: false,
  pinned_num_register_threads: 1,
  release_lock_on_cudamalloc: false,
  pinned_use_cuda_host_register: false,
  roundup_power2_divisions: {},
};

/**
 * A pool's `allocator_settings` as PyTorch writes them: `garbage_collection_threshold` is a Python
 * float even when integral (a pool reports it as a plain number).
 */
function torchSettings(
  settings: Readonly<Record<string, PickleValue>>,
): Readonly<Record<string, PickleValue>> {
  const threshold = settings.garbage_collection_threshold;
  return typeof threshold === 'number'
    ? { ...settings, garbage_collection_threshold: pickleFloat(threshold) }
    : settings;
}

function toMicroseconds(ms: number): number {
  return Math.round(ms * 1000);
}

function segmentType(pool: string | undefined): 'small' | 'large' {
  return pool !== undefined && /small/i.test(pool) ? 'small' : 'large';
}

function torchBlock(block: SnapshotBlock): TorchBlock {
  return {
    address: block.address,
    size: block.size,
    requested_size: block.requestedSize,
    state: block.state,
    frames: parseStack(block.stack),
  };
}

function gapBlock(address: number, size: number): TorchBlock {
  return { address, size, requested_size: 0, state: 'inactive', frames: [] };
}

/** The PyTorch snapshot dictionary of a stats adaptor (takes a snapshot) or of a snapshot. */
export function toTorchSnapshot(source: StatsAllocator | MemorySnapshot): TorchSnapshot {
  const snapshot = 'segments' in source ? source : source.snapshot();
  const device = snapshot.device;
  const segments: TorchSegment[] = snapshot.segments.map((segment) => {
    const blocks: TorchBlock[] = [];
    let cursor = segment.address;
    let allocated = 0;
    let active = 0;
    let requested = 0;
    for (const block of segment.blocks) {
      if (block.address > cursor) blocks.push(gapBlock(cursor, block.address - cursor));
      blocks.push(torchBlock(block));
      cursor = block.address + block.size;
      if (block.state === 'active_allocated') allocated += block.size;
      if (block.state !== 'inactive') {
        active += block.size;
        requested += block.requestedSize;
      }
    }
    const end = segment.address + segment.size;
    if (cursor < end) blocks.push(gapBlock(cursor, end - cursor));
    return {
      device,
      address: segment.address,
      total_size: segment.size,
      allocated_size: allocated,
      active_size: active,
      requested_size: requested,
      stream: segment.stream,
      segment_type: segmentType(segment.pool),
      segment_pool_id: pickleTuple(0, 0),
      is_expandable: segment.expandable,
      frames: [],
      blocks,
    };
  });

  const trace: TorchTraceEntry[] = [];
  const annotations: TorchAnnotation[] = [];
  for (const event of snapshot.trace) {
    const time_us = toMicroseconds(event.time);
    if (event.action === 'annotation') {
      annotations.push({ device, stage: event.stage ?? 'MARK', name: event.name ?? '', time_us });
      continue;
    }
    const frames = event.stack === undefined ? {} : { frames: parseStack(event.stack) };
    if (event.action === 'oom') {
      trace.push({
        action: 'oom',
        device_free: event.freeBytes ?? 0,
        size: event.size,
        stream: event.stream,
        time_us,
        ...frames,
      });
    } else {
      trace.push({
        action: event.action,
        addr: event.address,
        size: event.size,
        stream: event.stream,
        time_us,
        ...frames,
      });
    }
  }
  const device_traces: TorchTraceEntry[][] = [];
  for (let d = 0; d < device; d++) device_traces.push([]);
  device_traces.push(trace);

  return {
    segments,
    device_traces,
    allocator_settings:
      snapshot.allocatorSettings === undefined
        ? DEFAULT_ALLOCATOR_SETTINGS
        : torchSettings(snapshot.allocatorSettings),
    external_annotations: annotations,
  };
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (value instanceof PickleTuple) return value.items;
  if (value instanceof PickleFloat) return value.value;
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** The snapshot dictionary as JSON text (tuples become arrays). */
export function toTorchSnapshotJson(
  source: StatsAllocator | MemorySnapshot | TorchSnapshot,
  space?: number,
): string {
  const snapshot = 'device_traces' in source ? source : toTorchSnapshot(source);
  return JSON.stringify(snapshot, jsonReplacer, space);
}

/**
 * The snapshot dictionary as a Python pickle: the bytes `torch.cuda.memory._dump_snapshot()` would
 * write. Save them as `snapshot.pickle` and drop the file on https://pytorch.org/memory_viz.
 */
export function toTorchSnapshotPickle(
  source: StatsAllocator | MemorySnapshot | TorchSnapshot,
): Uint8Array {
  const snapshot = 'device_traces' in source ? source : toTorchSnapshot(source);
  return pickle(snapshot as unknown as PickleValue);
}
