/**
 * A caching pool under one setting that goes on from one piece of a rank's timeline to the next,
 * so a new dump costs a replay of its new entries only, never of the job so far.
 *
 * ```
 *  first piece (a whole dump) ─► poolInstance: the recorded starting state restored ─► replay
 *  next piece (the entries the next dump adds) ─► its trace's starting state names, by device
 *      address, the blocks live at its start: each is this pool's own block for that address
 *      (or none, where this setting failed to allocate it) ─► a replayer seeded with them ─► replay
 *  live blocks after each piece: device address (as recorded) ─► this pool's address
 * ```
 *
 * The pool, its address source and their peaks carry over; only the replayer is new per piece.
 * The requests of a recorded out-of-memory error are not asked for here (the timeline is what the
 * job did); `rank-timeline.ts` asks them of the dump that holds them, at its wall.
 */
import type { AllocatorSettings } from '@allot/caching';
import { NOT_LIVE, Replayer, type Trace } from '@allot/workloads';
import type { DeviceModel } from '../analysis/device';
import { type PoolInstance, poolInstance } from '../analysis/pool-instance';
import { beginReplay, type SegmentDecisions } from '../analysis/row-instance';

/** The device address each block of a piece had, as recorded (NaN where unknown). */
export type RecordedAddresses = Float64Array;

/** One setting's pool, carried along a rank's timeline. */
export class ContinuedPool {
  private readonly instance: PoolInstance;
  private replayer: Replayer;
  /** Blocks live now: recorded device address ─► this pool's address. */
  private live = new Map<number, number>();
  private failuresBefore = 0;
  private peakLiveBefore = 0;

  /** Starts the pool on `first` (a whole dump, its starting state restored) and replays it. */
  constructor(
    readonly settings: AllocatorSettings,
    first: Trace,
    addresses: RecordedAddresses,
    device: DeviceModel,
  ) {
    this.instance = poolInstance(settings, first, null, device);
    this.replayer = beginReplay(this.instance, first);
    this.replayer.run();
    this.keepLive(addresses);
  }

  /** `PYTORCH_CUDA_ALLOC_CONF` of the pool, canonical. */
  get config(): string {
    return this.instance.config ?? '';
  }

  /** Peak reserved bytes since the first piece's start (`reserved_bytes.all.peak`). */
  get peakReservedBytes(): number {
    return this.instance.peakReserved(this.replayer);
  }

  /** Reserved bytes now. */
  get reservedBytes(): number {
    return this.instance.reserved(this.replayer);
  }

  get peakLiveBytes(): number {
    return Math.max(this.peakLiveBefore, this.replayer.peakLiveBytes);
  }

  /** Allocations this setting could not serve, over every piece. */
  get failures(): number {
    return this.failuresBefore + this.replayer.failures;
  }

  /** cudaMalloc and map calls since the first piece's start, its starting state's left out. */
  get segments(): SegmentDecisions {
    return this.instance.segments!();
  }

  /**
   * Replays `piece`, whose starting state holds the blocks live at its start (ids below
   * `start.events`), from where the pool is.
   */
  continue(piece: Trace, addresses: RecordedAddresses): void {
    this.failuresBefore += this.replayer.failures;
    this.peakLiveBefore = this.peakLiveBytes;
    const state = new Replayer(piece, this.instance.pool);
    const leading = piece.start?.events ?? 0;
    let liveBytes = 0;
    let liveBlocks = 0;
    for (let id = 0; id < leading; id++) {
      const own = this.live.get(addresses[id]!);
      if (own === undefined) continue;
      state.addresses[id] = own;
      liveBytes += piece.size[id]!;
      liveBlocks++;
    }
    state.position = leading;
    state.liveBytes = liveBytes;
    state.liveBlocks = liveBlocks;
    state.peakLiveBytes = liveBytes;
    state.windowPeakLiveBytes = liveBytes;
    state.run();
    this.replayer = state;
    this.keepLive(addresses);
  }

  private keepLive(addresses: RecordedAddresses): void {
    const live = new Map<number, number>();
    const own = this.replayer.addresses;
    for (let id = 0; id < own.length; id++) {
      if (own[id] !== NOT_LIVE) live.set(addresses[id]!, own[id]!);
    }
    this.live = live;
  }
}
