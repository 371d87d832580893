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
import type { DeviceModel } from './device';
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
 * Watches a replay of the recorded settings as it reaches each burst of the trace's releases (set
 * {@link ReleaseWatch.before} as the replayer's `beforeRelease`), and tells them apart (see the
 * module comment). The sampled pass of the recorded row is that replay; {@link recordedReleases}
 * runs one of its own when there was none.
 */
export class ReleaseWatch {
  private atWall = 0;
  private below = Number.POSITIVE_INFINITY;
  private nextGrow = 0;
  private lastBurst = -1;
  private readonly grows: readonly { readonly event: number; readonly size: number }[];

  constructor(
    private readonly trace: Trace,
    private readonly recordedPeak: number,
  ) {
    this.grows = (trace.recordedSegments ?? []).filter((segment) => segment.size > 0);
  }

  /**
   * Before release `index` of the trace, the replay at its event: looks at the cache (`layout`)
   * once a burst, at its first release.
   */
  before(index: number, layout: () => Layout): void {
    const { trace, grows } = this;
    const releases = trace.releases!;
    const event = releases.event[index]!;
    if (event === this.lastBurst) return;
    this.lastBurst = event;
    while (this.nextGrow < grows.length && grows[this.nextGrow]!.event < event) this.nextGrow++;
    const after = grows[this.nextGrow];
    const reserved = releases.reservedBefore[index]!;
    if (
      after !== undefined &&
      after.event === event &&
      event < trace.length &&
      trace.kind[event] === EventKind.Alloc &&
      reserved + after.size > this.recordedPeak &&
      !cacheHolds(layout(), trace.size[event]!, trace.stream?.[event] ?? 0)
    ) {
      this.atWall++;
      this.below = Math.min(this.below, reserved + after.size);
    }
  }

  /** Bursts at the wall so far, and the least sum that passed the peak (null when none). */
  result(): { readonly atWall: number; readonly wallBelowBytes: number | null } {
    return { atWall: this.atWall, wallBelowBytes: this.atWall > 0 ? this.below : null };
  }
}

/** Bursts of the trace's releases: runs of releases before the same event. */
function burstsOf(trace: Trace): number {
  const events = trace.releases?.event ?? [];
  let bursts = 0;
  for (let i = 0; i < events.length; i++) if (i === 0 || events[i - 1] !== events[i]) bursts++;
  return bursts;
}

/** Whether {@link recordedReleases} would look at the bursts of `trace` with a replay. */
export function watchesReleases(trace: Trace): boolean {
  const bursts = burstsOf(trace);
  return bursts > 0 && bursts <= MAX_BURSTS;
}

/**
 * See {@link RecordedReleases}; undefined when the recording gave nothing back. `config` is the
 * recorded settings, replayed on `device` to see the cache before each burst, unless `watched`
 * watched a replay of them already.
 */
export function recordedReleases(
  trace: Trace,
  recordedPeak: number,
  config: string | undefined,
  device?: DeviceModel,
  watched?: ReleaseWatch,
): RecordedReleases | undefined {
  const releases = trace.releases;
  if (releases === undefined || releases.event.length === 0) return undefined;
  const bursts = burstsOf(trace);
  const base = { segments: releases.event.length, bursts, wallFromBytes: recordedPeak };
  if (config === undefined || bursts > MAX_BURSTS) {
    return { ...base, atWall: 0, wallBelowBytes: null };
  }
  if (watched !== undefined) return { ...base, ...watched.result() };
  const instance = poolInstance(parseAllocConf(config), trace, null, device);
  const pool = instance.pool;
  const watch = new ReleaseWatch(trace, recordedPeak);
  const state = new Replayer(trace, pool);
  instance.begin?.(state);
  state.beforeRelease = (index) => watch.before(index, () => pool.layout());
  state.run(releases.event[releases.event.length - 1]! + 1);
  return { ...base, ...watch.result() };
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
