/**
 * The segments a recording gave back (`segment_free`), in bursts, and what they say of the card.
 * PyTorch gives cached segments back on `torch.cuda.empty_cache()` and, when a `cudaMalloc` fails,
 * before it retries (`release_cached_blocks`). The recording does not say which: the replay of the
 * recorded settings does. A burst is at the wall when, just before it, no cached block could hold
 * the next request (so PyTorch needed a new segment) and that segment would have taken reserved
 * memory past the recording's peak; the card's limit then lies between the peak and the least such
 * sum. Other bursts read as `empty_cache()`.
 */
import { parseAllocConf } from '@allot/caching';
import type { Layout } from '@allot/core';
import type { PoolLayoutSegment } from '@allot/stats';
import { EventKind, Replayer, type Trace } from '@allot/workloads';
import type { DeviceModel } from './pool-instance';
import { poolInstance } from './pool-instance';

/** See the module comment. */
export interface RecordedReleases {
  /** Segments given back, and the bursts they came in. */
  readonly segments: number;
  readonly bursts: number;
  /** Bursts at the wall. */
  readonly atWall: number;
  /** The card's limit is at least this (the recorded peak) ... */
  readonly wallFromBytes: number;
  /** ... and below this (null when no burst was at the wall). */
  readonly wallBelowBytes: number | null;
}

/** Bursts past which the replay that tells them apart is not run (each takes a layout). */
const MAX_BURSTS = 2000;

/** PyTorch's large-pool threshold: requests above 1 MiB come from the large pool. */
const SMALL_SIZE = 2 ** 20;

/**
 * See {@link RecordedReleases}; undefined when the recording gave nothing back. `config` is the
 * recorded settings, replayed on `device` to see the cache before each burst.
 */
export function recordedReleases(
  trace: Trace,
  recordedPeak: number,
  config: string | undefined,
  device?: DeviceModel,
): RecordedReleases | undefined {
  const releases = trace.releases;
  if (releases === undefined || releases.event.length === 0) return undefined;
  const starts: number[] = [];
  for (let i = 0; i < releases.event.length; i++) {
    if (i === 0 || releases.event[i - 1] !== releases.event[i]) starts.push(i);
  }
  const base = {
    segments: releases.event.length,
    bursts: starts.length,
    wallFromBytes: recordedPeak,
  };
  if (config === undefined || starts.length > MAX_BURSTS) {
    return { ...base, atWall: 0, wallBelowBytes: null };
  }
  const grows = (trace.recordedSegments ?? []).filter((segment) => segment.size > 0);
  const instance = poolInstance(parseAllocConf(config), trace, null, device);
  const pool = instance.pool;
  // The pool without its release: the bursts are replayed here, after a look at the cache.
  const target = {
    allocate: (size: number, alignment?: number) => pool.allocate(size, alignment),
    allocateOn: (stream: number, size: number, alignment?: number) =>
      pool.allocateOn(stream, size, alignment),
    free: (address: number) => pool.free(address),
  };
  const state = new Replayer(trace, target);
  instance.begin?.(state);
  let atWall = 0;
  let below = Number.POSITIVE_INFINITY;
  let next = 0;
  for (let b = 0; b < starts.length; b++) {
    const first = starts[b]!;
    const end = b + 1 < starts.length ? starts[b + 1]! : releases.event.length;
    const event = releases.event[first]!;
    if (event < state.position) continue;
    state.run(event);
    while (next < grows.length && grows[next]!.event < event) next++;
    const after = grows[next];
    const reserved = releases.reservedBefore[first]!;
    if (
      after !== undefined &&
      after.event === event &&
      event < trace.length &&
      trace.kind[event] === EventKind.Alloc &&
      reserved + after.size > recordedPeak &&
      !cacheHolds(pool.layout(), trace.size[event]!, trace.stream?.[event] ?? 0)
    ) {
      atWall++;
      below = Math.min(below, reserved + after.size);
    }
    for (let i = first; i < end; i++) pool.release(releases.bytes[i]!);
  }
  return { ...base, atWall, wallBelowBytes: atWall > 0 ? below : null };
}

/** Whether a cached block of the request's pool and stream could hold `size` bytes. */
function cacheHolds(layout: Layout, size: number, stream: number): boolean {
  const pool = size > SMALL_SIZE ? 'large' : 'small';
  return layout.segments.some((segment) => {
    const s = segment as PoolLayoutSegment;
    return (
      s.pool === pool &&
      (s.stream ?? 0) === stream &&
      s.blocks.some((block) => block.free && block.size >= size)
    );
  });
}
