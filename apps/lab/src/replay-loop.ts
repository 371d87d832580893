/**
 * The lab's replay loop, compiled once per allocator row.
 *
 * Every row runs in this one process, and a loop shared by all of them would see every row's
 * `allocate` and `free` at its two call sites: megamorphic calls that V8 cannot inline, which makes
 * each row look slower than it is in an application that uses one allocator. `compileReplayLoop()`
 * therefore builds a fresh copy of the loop (`new Function` gives each copy call sites of its own),
 * the in-process counterpart of apps/bench's one process per row.
 *
 * The loop resumes where it stopped (`state.position`), so the same code serves the timed runs
 * (whole trace) and the sampled run (slices, figures read between them). Streams: an allocation on a
 * stream other than 0 goes to `target.allocateOn(stream, size)` when the trace has streams.
 */
import type { Trace } from '@allot/workloads';

/** What the loop drives: the core contract's two calls, and stream-ordered allocation when present. */
export interface LoopTarget {
  allocate(size: number, alignment?: number): number | null;
  free(address: number): void;
  allocateOn?(stream: number, size: number, alignment?: number): number | null;
}

/** Mutable figures of one replay. */
export interface LoopState {
  position: number;
  liveBytes: number;
  peakLiveBytes: number;
  /** Largest live bytes since this was last set to the current live bytes (a sampling window). */
  windowPeakLiveBytes: number;
  /** Largest `address + size − base` of a successful block. */
  highWater: number;
  failures: number;
  firstFailure: number;
  readonly base: number;
  /** Address of each block by id, −1 when not live. */
  readonly addresses: Float64Array;
}

/** Runs events `[state.position, to)` of `trace` through `target`; returns events processed. */
export type ReplayLoop = (trace: Trace, target: LoopTarget, state: LoopState, to: number) => number;

/** A fresh state for `trace`. */
export function newLoopState(trace: Trace, base = 0): LoopState {
  return {
    position: 0,
    liveBytes: 0,
    peakLiveBytes: 0,
    windowPeakLiveBytes: 0,
    highWater: 0,
    failures: 0,
    firstFailure: -1,
    base,
    addresses: new Float64Array(trace.allocCount).fill(-1),
  };
}

const SOURCE = `
const kind = trace.kind, id = trace.id, size = trace.size, alignment = trace.alignment;
const streams = trace.stream;
const addresses = state.addresses;
const base = state.base;
const end = to < trace.length ? to : trace.length;
let live = state.liveBytes, peak = state.peakLiveBytes, high = state.highWater;
let windowPeak = state.windowPeakLiveBytes;
const start = state.position;
let i = start;
for (; i < end; i++) {
  const block = id[i];
  if (kind[i] === 0) {
    const bytes = size[i];
    const align = alignment[i];
    const stream = streams === undefined ? 0 : streams[i];
    let address;
    if (stream !== 0 && target.allocateOn !== undefined) {
      address = align === 0 ? target.allocateOn(stream, bytes) : target.allocateOn(stream, bytes, align);
    } else {
      address = align === 0 ? target.allocate(bytes) : target.allocate(bytes, align);
    }
    if (address === null) {
      state.failures++;
      if (state.firstFailure < 0) state.firstFailure = i;
      continue;
    }
    addresses[block] = address;
    live += bytes;
    if (live > windowPeak) {
      windowPeak = live;
      if (live > peak) peak = live;
    }
    const top = address + bytes - base;
    if (top > high) high = top;
  } else {
    const address = addresses[block];
    if (address === -1) continue;
    target.free(address);
    addresses[block] = -1;
    live -= size[i];
  }
}
state.liveBytes = live;
state.peakLiveBytes = peak;
state.windowPeakLiveBytes = windowPeak;
state.highWater = high;
state.position = i;
return i - start;
`;

/** A new copy of the replay loop, with call sites of its own (see the module comment). */
export function compileReplayLoop(): ReplayLoop {
  return new Function('trace', 'target', 'state', 'to', SOURCE) as ReplayLoop;
}
