/**
 * A real snapshot written again with Python stacks added: every trace entry, every segment and
 * every allocated block gets a stack of the chosen depth, and everything else (events, sizes,
 * times, segments, settings) is kept, so PyTorch's recorded figures stay the ground truth of a
 * replay. With depth 0 the snapshot is written as it was; a snapshot PyTorch wrote comes back
 * byte for byte.
 *
 * Stacks are shared as PyTorch shares them (see stack-lists.ts): a `segment_alloc` or
 * `segment_free` takes the stack of the `alloc` after it, a `free_completed` the stack of the
 * `free_requested` of its address, a live block the stack of the last `alloc` at its address, and
 * a segment that of its `segment_alloc`. Inactive blocks keep the empty list, as in PyTorch, which
 * forgets the context of a freed block.
 */
import { ItemBatches, type PickleWriter, type UnpickledValue } from '@allot/pickle';
import { isDict as isRecordedDict } from '../readers/recorded-values';
import type { Dict, SnapshotEncoder } from './snapshot-encoder';

/** What a base snapshot held. */
export interface BaseCounts {
  readonly eventsPerDevice: number[];
  readonly segments: number;
  readonly blocks: number;
}

/** Block states that are active, and so keep the context of their allocation. */
const ACTIVE_STATES = new Set(['active_allocated', 'active_pending_free']);

/** Whether `value` (read by `unpickle`) is a dict: the readers' test, with the writer's type. */
const isDict = (value: UnpickledValue | undefined): value is Dict => isRecordedDict(value);

function dictsOf(value: UnpickledValue | undefined, what: string): Dict[] {
  if (!Array.isArray(value) || !value.every(isDict)) {
    throw new TypeError(`base snapshot: ${what} must be a list of dicts`);
  }
  return value;
}

/** Map key for an address (a number, or a bigint past 2^53). */
type Address = UnpickledValue | undefined;

/** Stack keys of one device's trace: which entries share a stack, and each key's last use. */
class TraceStacks {
  readonly key: Int32Array;
  readonly last: Uint8Array;
  /** Index of the last `alloc` at each address. */
  readonly lastAlloc = new Map<Address, number>();
  /** Index of the last `segment_alloc` at each address. */
  readonly lastSegmentAlloc = new Map<Address, number>();

  constructor(entries: readonly Dict[]) {
    const count = entries.length;
    const key = new Int32Array(count);
    const pendingFree = new Map<Address, number>();
    for (let i = 0; i < count; i++) {
      const { action, addr } = entries[i]!;
      key[i] = i;
      if (action === 'alloc') this.lastAlloc.set(addr, i);
      else if (action === 'segment_alloc') this.lastSegmentAlloc.set(addr, i);
      else if (action === 'free_requested') pendingFree.set(addr, i);
      else if (action === 'free_completed') {
        key[i] = pendingFree.get(addr) ?? i;
        pendingFree.delete(addr);
      }
    }
    let nextAlloc = -1;
    for (let i = count - 1; i >= 0; i--) {
      const action = entries[i]!.action;
      if (action === 'alloc') nextAlloc = i;
      else if ((action === 'segment_alloc' || action === 'segment_free') && nextAlloc >= 0) {
        key[i] = nextAlloc;
      }
    }
    const seen = new Set<number>();
    this.last = new Uint8Array(count);
    for (let i = count - 1; i >= 0; i--) {
      if (!seen.has(key[i]!)) this.last[i] = 1;
      seen.add(key[i]!);
    }
    this.key = key;
  }

  /** Key of the stack of a live block at `address`, -1 when its allocation is not in the trace. */
  blockKey(address: Address): number {
    return this.lastAlloc.get(address) ?? -1;
  }

  /** Key of the stack of a segment at `address`, -1 when its `segment_alloc` is not in the trace. */
  segmentKey(address: Address): number {
    const index = this.lastSegmentAlloc.get(address);
    return index === undefined ? -1 : this.key[index]!;
  }
}

/** Hands out the writer's final bytes, if any, and drops them once the consumer asks for more. */
export function* flush(writer: PickleWriter): Generator<Uint8Array> {
  if (writer.readyBytes === 0) return;
  yield writer.ready();
  writer.release();
}

/** Writes `base` with stacks of `encoder`'s depth (none: as it was); yields chunks of it. */
export function* baseSnapshotChunks(
  base: UnpickledValue,
  encoder: SnapshotEncoder,
  depth: number,
  chunkBytes: number,
): Generator<Uint8Array, BaseCounts> {
  if (!isDict(base)) throw new TypeError('base snapshot: expected a dict at the top');
  const segments = dictsOf(base.segments, 'segments');
  const traces = base.device_traces;
  if (!Array.isArray(traces)) {
    throw new TypeError('base snapshot: device_traces must be a list');
  }
  const devices = traces.map((trace, d) => dictsOf(trace, `device_traces[${d}]`));
  const stacks = depth > 0 ? devices.map((entries) => new TraceStacks(entries)) : [];
  const { writer, strings } = encoder;
  let blockCount = 0;
  const stackOf = (device: number, key: number, last: boolean) => () =>
    encoder.stacks.write(device, key, last);

  writer.start();
  writer.emptyDict();
  const keys = Object.keys(base);
  const top = new ItemBatches(writer, keys.length, true);
  for (const key of keys) {
    top.before();
    strings.fresh(key);
    if (key === 'segments') {
      writer.emptyList();
      const list = new ItemBatches(writer, segments.length, false);
      for (const segment of segments) {
        list.before();
        const blocks = dictsOf(segment.blocks ?? [], 'blocks');
        blockCount += blocks.length;
        if (depth === 0) {
          encoder.value(segment);
        } else {
          const device = Number(segment.device ?? 0);
          const trace = stacks[device];
          const segmentKey = trace?.segmentKey(segment.address) ?? -1;
          encoder.record(segment, stackOf(device, segmentKey, false), (item) => {
            if (item !== 'blocks') return false;
            writer.emptyList();
            const items = new ItemBatches(writer, blocks.length, false);
            for (const block of blocks) {
              items.before();
              const active = ACTIVE_STATES.has(String(block.state));
              const blockKey = trace?.blockKey(block.address) ?? -1;
              encoder.record(block, active ? stackOf(device, blockKey, false) : null);
              items.after();
            }
            return true;
          });
        }
        list.after();
        if (writer.readyBytes >= chunkBytes) yield* flush(writer);
      }
    } else if (key === 'device_traces') {
      writer.emptyList();
      const list = new ItemBatches(writer, devices.length, false);
      for (let device = 0; device < devices.length; device++) {
        list.before();
        const entries = devices[device]!;
        const trace = stacks[device];
        writer.emptyList();
        const items = new ItemBatches(writer, entries.length, false);
        for (let i = 0; i < entries.length; i++) {
          items.before();
          if (trace === undefined) encoder.value(entries[i]!);
          else encoder.record(entries[i]!, stackOf(device, trace.key[i]!, trace.last[i] === 1));
          items.after();
          if (writer.readyBytes >= chunkBytes) yield* flush(writer);
        }
        list.after();
      }
    } else {
      encoder.value(base[key]!, key);
    }
    top.after();
  }
  writer.finish();
  yield* flush(writer);
  return {
    eventsPerDevice: devices.map((entries) => entries.length),
    segments: segments.length,
    blocks: blockCount,
  };
}
