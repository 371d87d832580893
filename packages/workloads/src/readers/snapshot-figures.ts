/**
 * What a snapshot's trace carries beside its events, from the device's entry columns: PyTorch's own
 * reserved line, and the out-of-memory errors the recording holds.
 */
import type { RecordedOom, Trace } from '../trace';
import type { StackTable } from './stack-table';

/**
 * PyTorch's reserved bytes after each of a trace's `length` events: `atStart` through the `leading`
 * events of the starting state, then moved by each segment decision before the event it precedes.
 */
export function reservedLine(
  length: number,
  leading: number,
  atStart: number,
  segmentEvents: readonly SegmentEvent[],
): Float64Array {
  const reserved = new Float64Array(length);
  let bytes = atStart;
  let next = 0;
  for (let i = 0; i < length; i++) {
    const op = i - leading;
    while (next < segmentEvents.length && op >= 0 && segmentEvents[next]!.at <= op) {
      const event = segmentEvents[next++]!;
      bytes += event.grow ? event.size : -event.size;
    }
    reserved[i] = bytes;
  }
  return reserved;
}

/** An `oom` entry, as its row held it when the trace's events settled past it. */
export interface OomEntry {
  /** Its index in the device's entries. */
  readonly entry: number;
  /** Pointer events before it, and the window's segment growth before it. */
  readonly before: number;
  readonly delta: number;
  readonly size: number;
  readonly stream: number;
  readonly time: number;
  readonly stack: number;
  readonly deviceFree: number;
}

/**
 * The recorded out-of-memory errors: each `oom` entry's request and `device_free`, with PyTorch's
 * reserved bytes then (the window's start plus the segment growth before the entry) and the bytes
 * live then (after the trace event before it). A missing or impossible field is said, not fatal.
 */
export function oomsOf(
  ooms: readonly OomEntry[],
  trace: Trace,
  leading: number,
  atStart: number,
  stacks: StackTable,
  streamIndex: (stream: number) => number,
): RecordedOom[] {
  const out: RecordedOom[] = [];
  let live = 0;
  let next = 0;
  for (const oom of ooms) {
    const event = leading + oom.before;
    for (; next < event && next < trace.length; next++) {
      live += trace.kind[next] === 0 ? trace.size[next]! : -trace.size[next]!;
    }
    const { size, deviceFree: free, time, stack, stream } = oom;
    const reserved = atStart + oom.delta;
    const problems: string[] = [];
    if (!Number.isSafeInteger(size) || size <= 0) problems.push(`a size of ${String(size)}`);
    const validFree = Number.isSafeInteger(free) && free >= 0;
    if (!validFree) {
      problems.push(Number.isNaN(free) ? 'no device_free' : `a device_free of ${String(free)}`);
    }
    out.push({
      entry: oom.entry,
      event,
      sizeBytes: Number.isFinite(size) ? size : 0,
      stream,
      streamIndex: streamIndex(stream),
      ...(Number.isFinite(time) ? { timeUs: time } : {}),
      ...(validFree ? { deviceFreeBytes: free, capacityBytes: reserved + free } : {}),
      reservedBytes: reserved,
      allocatedBytes: live,
      ...(stack > 0 ? { frames: stacks.framesOf(stack) } : {}),
      ...(problems.length > 0 ? { problem: problems.join(' and ') } : {}),
    });
  }
  return out;
}

/** A segment decision in the window: `at` counts the pointer events before it. */
export interface SegmentEvent {
  readonly grow: boolean;
  /** An expandable segment's pages unmapped (`segment_unmap`), not a segment given back. */
  readonly unmap: boolean;
  /** The window's segment growth before it (reserved bytes less those at the window's start). */
  readonly delta: number;
  readonly address: number;
  readonly size: number;
  readonly at: number;
}
