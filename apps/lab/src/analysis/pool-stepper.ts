/**
 * A caching pool's state at any event of a trace, not only at the peak: the pool replayed up to and
 * including event `i` under a setting and a device, its segments and blocks, and what event `i`
 * was. A {@link PoolStepper} keeps its replay between questions, so that stepping forward goes on
 * from where it is; stepping back replays from the start.
 *
 * ```
 *  stateAt(i) ─► replayer behind i? ─► a fresh pool (the trace's starting state) ─► run(i) ─► the
 *  event's block before it ─► run(i + 1) ─► layout(): segments, blocks (flat), reserved, live
 * ```
 */
import { type AllocatorSettings, formatAllocConf } from '@allot/caching';
import { EventKind, NOT_LIVE, type Replayer, type Trace } from '@allot/workloads';
import type { DeviceModel } from './device';
import { type PoolInstance, poolInstance } from './pool-instance';
import { beginReplay } from './row-instance';
import { stackSource } from './stack-source';

/** Figures per block in {@link PoolState.blocks}. */
export const BLOCK_FIELDS = 5;

/** The pool after one event of a trace. */
export interface PoolState {
  /** The event shown, from 0; the state is the pool's just after it. */
  readonly event: number;
  readonly events: number;
  /** What the event was (`start`: one of the leading events of a starting state). */
  readonly kind: 'alloc' | 'free' | 'start';
  /** The bytes it asked for or gave back. */
  readonly bytes: number;
  /** Seconds since the trace's first event, when the recording states times. */
  readonly seconds: number | null;
  /** What made its block (`stack-source.ts`): the frame of your own code, or what made it in words; null without a stack. */
  readonly frame: string | null;
  /** The address of the event's block (null when the pool could not serve it). */
  readonly address: number | null;
  readonly reservedBytes: number;
  readonly liveBytes: number;
  readonly segments: readonly {
    readonly address: number;
    readonly size: number;
    readonly pool: string;
  }[];
  /** Per block, {@link BLOCK_FIELDS} figures: segment index, address, size, free (1) or live (0), requested bytes. */
  readonly blocks: Float64Array;
}

/** The replay of one trace under one setting and device, kept between questions. */
export class PoolStepper {
  private instance: PoolInstance | null = null;
  private replayer: Replayer | undefined;
  private key = '';

  constructor(readonly trace: Trace) {}

  /** The pool just after event `event` (clamped to the trace) under `settings` on `device`. */
  stateAt(event: number, settings: AllocatorSettings, device: DeviceModel): PoolState {
    const trace = this.trace;
    const i = Math.max(0, Math.min(trace.length - 1, Math.floor(event)));
    const key = `${formatAllocConf(settings)}\n${JSON.stringify(device)}`;
    if (this.instance === null || key !== this.key || this.replayer!.position > i) {
      this.instance = poolInstance(settings, trace, null, device);
      this.replayer = beginReplay(this.instance, trace, this.replayer);
      this.key = key;
    }
    const state = this.replayer!;
    const id = trace.id[i]!;
    const start = state.position > i; // inside a restored starting state
    state.run(i);
    const before = state.addresses[id]!;
    state.run(i + 1);
    const after = state.addresses[id]!;
    const alloc = trace.kind[i] === EventKind.Alloc;
    const at = alloc ? after : before;
    const layout = this.instance.layout(state);
    const blocks: number[] = [];
    const segments = layout.segments.map((segment, s) => {
      for (const block of segment.blocks) {
        blocks.push(s, block.address, block.size, block.free ? 1 : 0, block.requestedSize ?? 0);
      }
      return { address: segment.address, size: segment.size, pool: segment.pool ?? '' };
    });
    const stack = trace.frames?.get(id);
    const time = trace.time;
    return {
      event: i,
      events: trace.length,
      kind: start ? 'start' : alloc ? 'alloc' : 'free',
      bytes: trace.size[i]!,
      seconds: time === undefined ? null : (time[i]! - time[0]!) / 1e6,
      frame: stack === undefined ? null : stackSource(stack).text,
      address: at === NOT_LIVE ? null : at,
      reservedBytes: this.instance.reserved(state),
      liveBytes: state.liveBytes,
      segments,
      blocks: Float64Array.from(blocks),
    };
  }
}
