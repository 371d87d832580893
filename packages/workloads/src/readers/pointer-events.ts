/**
 * Turns a recording keyed by pointers (PyTorch snapshots and profiler traces, RMM logs) into a
 * {@link Trace}: each allocation gets the next dense block id, and a free finds its block by address.
 *
 * Recordings are windows: a free whose address was allocated before the window began has no
 * allocation to match. Such a block is modelled as live from the start: an allocation of the size
 * the free reports is placed before the first event (in the order the frees appear), so the replay
 * holds the same memory the program held. `meta.preexistingBlocks` and `meta.preexistingBytes` count
 * them.
 *
 * ```
 *  add('alloc', 0x7f00, 512) … add('free', 0x7e00, 4096)      (0x7e00 never allocated here)
 *  ⇒  Alloc(4096) [pre-existing]  Alloc(512) … Free(block 0)
 * ```
 */

import { AddressMap, NIL } from '@allot/blocks';
import { TraceFormatError, type TraceLocationUnit } from '../errors';
import { DEFAULT_MAX_EVENTS, type Trace, TraceBuilder, type TraceMeta } from '../trace';
import { StackFrames, type StackTable } from './stack-table';

/** A block allocated before the window began. */
export interface PreexistingBlock {
  readonly address: number;
  /** Bytes requested. */
  readonly size: number;
  /** Dense stream id. */
  readonly stream: number;
  /** Its stack in the build's stack table (0 for none), when the recording states it. */
  readonly stack?: number;
}

const ALLOC = 0;
const FREE = 1;

/** Collects pointer events, checks them, and builds the trace. */
export class PointerEvents {
  /** Events so far; the typed columns below hold them in `[0, count)`, grown by half. */
  private count = 0;
  private ops = new Uint8Array(1024);
  private addresses = new Float64Array(1024);
  private sizes = new Float64Array(1024);
  private streams = new Uint32Array(1024);
  private locations = new Float64Array(1024);
  /** For each free of a pre-existing block, its index in `preexisting`; -1 elsewhere. */
  private preexistingOf = new Int32Array(1024);
  private readonly live = new AddressMap();
  private readonly streamIds = new Map<string | number, number>();
  private readonly preexisting: PreexistingBlock[] = [];
  /** Time of each event in µs (NaN where none was stamped); null until one is. */
  private times: Float64Array | null = null;
  /** Stack of each allocation in the build's stack table (0 for none); null until one is stamped. */
  private stacks: Int32Array | null = null;

  /**
   * @param source - label for error messages.
   * @param unit - what the `location` passed to {@link alloc}/{@link free} counts.
   * @param maxEvents - most events, counting the leading allocations of pre-existing blocks.
   */
  /**
   * @param capacity - events expected, when the caller knows about how many: the columns take that
   *   room at once instead of growing to it (no copies, no spare half).
   */
  constructor(
    private readonly source: string,
    private readonly unit: TraceLocationUnit,
    private readonly maxEvents = DEFAULT_MAX_EVENTS,
    capacity?: number,
  ) {
    if (capacity !== undefined && capacity > this.ops.length) {
      this.grow(Math.min(capacity, maxEvents));
    }
  }

  private checkRoom(location: number): void {
    if (this.count + this.preexisting.length >= this.maxEvents) {
      throw new TraceFormatError(
        this.source,
        location,
        `at most ${this.maxEvents.toLocaleString('en-US')} events (the event limit)`,
        'more events',
        this.unit,
      );
    }
  }

  /** Number of events so far. */
  get length(): number {
    return this.count;
  }

  /**
   * Dense id of a stream named by any key (a pointer, a number, a string: a reader names its streams
   * one way). Stream ids start at 0.
   */
  /** The id {@link streamId} gave `key`, or -1 when no event was on that stream. */
  knownStreamId(key: string | number): number {
    return this.streamIds.get(key) ?? -1;
  }

  streamId(key: string | number): number {
    let id = this.streamIds.get(key);
    if (id === undefined) {
      id = this.streamIds.size;
      this.streamIds.set(key, id);
    }
    return id;
  }

  /** Number of distinct streams seen. */
  get streamCount(): number {
    return this.streamIds.size;
  }

  /**
   * An allocation of `size` bytes at `address`.
   * @throws TraceFormatError when the address is already live or the size is not a positive integer.
   */
  alloc(address: number, size: number, stream: number, location: number): void {
    this.checkRoom(location);
    if (!Number.isSafeInteger(size) || size <= 0) {
      throw new TraceFormatError(
        this.source,
        location,
        'a positive integer size',
        String(size),
        this.unit,
      );
    }
    if (this.live.has(address)) {
      throw new TraceFormatError(
        this.source,
        location,
        `an allocation at an address that is not live (0x${address.toString(16)} was allocated at ${this.unit} ${this.locations[this.live.get(address)]} and not freed since)`,
        `a second allocation at 0x${address.toString(16)}`,
        this.unit,
      );
    }
    this.live.set(address, this.count);
    this.push(ALLOC, address, size, stream, location, -1);
  }

  /**
   * The free of the block at `address`. `size` (when the recording states it) sizes a block that was
   * allocated before the window; pass 0 when unknown, which makes such a free an error.
   */
  free(address: number, size: number, stream: number, location: number): void {
    this.checkRoom(location);
    const at = this.live.get(address);
    if (at === NIL) {
      if (!Number.isSafeInteger(size) || size <= 0) {
        throw new TraceFormatError(
          this.source,
          location,
          'the free of a live address (or its size, to model a block allocated before the recording)',
          `a free of 0x${address.toString(16)}, which is not live`,
          this.unit,
        );
      }
      this.push(FREE, address, size, stream, location, this.preexisting.length);
      this.preexisting.push({ address, size, stream });
    } else {
      this.live.take(address);
      this.push(FREE, address, size, stream, location, -1);
    }
  }

  /**
   * Stamps the last event with its time (µs) and, for an allocation, the stack it was recorded
   * with (in the stack table {@link build} is given): the built trace carries them as
   * {@link Trace.time} and {@link Trace.frames}.
   */
  stamp(time: number, stack = 0): void {
    const at = this.count - 1;
    if (at < 0) return;
    if (Number.isFinite(time)) {
      if (this.times === null) {
        this.times = new Float64Array(this.ops.length);
        this.times.fill(Number.NaN);
      }
      this.times[at] = time;
    }
    if (stack > 0 && this.ops[at] === ALLOC) {
      this.stacks ??= new Int32Array(this.ops.length);
      this.stacks[at] = stack;
    }
  }

  /** Whether `address` holds a block allocated in the window and not freed yet. */
  isLive(address: number): boolean {
    return this.live.has(address);
  }

  /**
   * A block live for the whole window (allocated before it, never freed in it), known from the
   * recording's end state: it gets a leading allocation like a pre-existing block that is freed.
   */
  liveThroughout(address: number, size: number, stream: number, stack = 0): void {
    this.preexisting.push({ address, size, stream, ...(stack > 0 ? { stack } : {}) });
  }

  /**
   * Puts the blocks live at the start in address order (their leading allocations follow it), the
   * order in which a program that filled its memory from the bottom allocated them.
   */
  orderPreexistingByAddress(): void {
    const order = this.preexisting.map((_, i) => i);
    order.sort((x, y) => this.preexisting[x]!.address - this.preexisting[y]!.address);
    const rank = new Array<number>(order.length);
    order.forEach((old, i) => {
      rank[old] = i;
    });
    const sorted = order.map((old) => this.preexisting[old]!);
    for (let i = 0; i < sorted.length; i++) this.preexisting[i] = sorted[i]!;
    for (let i = 0; i < this.count; i++) {
      const at = this.preexistingOf[i]!;
      if (at >= 0) this.preexistingOf[i] = rank[at]!;
    }
  }

  /**
   * Blocks live when the window began, in the order of their leading allocations: block `i` of the
   * built trace is `preexistingBlocks()[i]`.
   */
  preexistingBlocks(): readonly PreexistingBlock[] {
    return this.preexisting;
  }

  /**
   * Builds the trace: pre-existing blocks first, then the events in order. `stackTable` is the
   * table the stamped stacks index, for {@link Trace.frames}.
   */
  build(name: string, meta: TraceMeta = {}, stackTable?: StackTable): Trace {
    const builder = new TraceBuilder(
      this.source,
      this.maxEvents,
      this.preexisting.length + this.count,
    );
    const preexistingIds = this.preexisting.map((block) =>
      builder.alloc(block.size, 0, block.stream),
    );
    const blockAt = new AddressMap();
    // Each block's stack, by block id: the pre-existing blocks' first, then the allocations'.
    const stackOf = new Int32Array(preexistingIds.length + this.count);
    let stacked = false;
    for (const [id, block] of this.preexisting.entries()) {
      stackOf[preexistingIds[id]!] = block.stack ?? 0;
      stacked ||= (block.stack ?? 0) > 0;
    }
    let preexistingBytes = 0;
    for (const block of this.preexisting) preexistingBytes += block.size;
    for (let i = 0; i < this.count; i++) {
      const address = this.addresses[i]!;
      if (this.ops[i] === ALLOC) {
        const id = builder.alloc(this.sizes[i]!, 0, this.streams[i]!);
        blockAt.set(address, id);
        if (this.stacks !== null) stackOf[id] = this.stacks[i]!;
      } else {
        const pre = this.preexistingOf[i]!;
        if (pre >= 0) {
          builder.free(preexistingIds[pre]!);
        } else {
          builder.free(blockAt.get(address));
          blockAt.take(address);
        }
      }
    }
    const trace = builder.build(name, {
      ...meta,
      streams: Math.max(1, this.streamIds.size),
      preexistingBlocks: this.preexisting.length,
      preexistingBytes,
    });
    const time = this.timeline(trace.length);
    const location = new Float64Array(trace.length);
    location.set(this.locations.subarray(0, this.count), trace.length - this.count);
    const frames =
      stackTable !== undefined && (stacked || this.stacks !== null)
        ? new StackFrames(stackTable, stackOf.subarray(0, trace.allocCount))
        : null;
    return {
      ...trace,
      ...(time !== null ? { time } : {}),
      ...(frames !== null ? { frames } : {}),
      location,
    };
  }

  /**
   * Times of the built trace's `length` events: leading events take the first stamped time, an
   * unstamped event the time of the one before it.
   */
  private timeline(length: number): Float64Array | null {
    if (this.times === null) return null;
    const time = new Float64Array(length);
    const leading = length - this.count;
    const stamped = this.times.subarray(0, this.count);
    let last = stamped.find((t) => Number.isFinite(t)) ?? 0;
    time.fill(last, 0, leading);
    for (let i = 0; i < this.count; i++) {
      const t = stamped[i]!;
      if (Number.isFinite(t)) last = t;
      time[leading + i] = last;
    }
    return time;
  }

  private push(
    op: number,
    address: number,
    size: number,
    stream: number,
    location: number,
    preexisting: number,
  ): void {
    const i = this.count;
    if (i === this.ops.length) this.grow(Math.ceil(i * 1.5));
    this.ops[i] = op;
    this.addresses[i] = address;
    this.sizes[i] = size;
    this.streams[i] = stream;
    this.locations[i] = location;
    this.preexistingOf[i] = preexisting;
    this.count = i + 1;
  }

  /** The columns with room for `capacity` events. */
  private grow(capacity: number): void {
    const widen = <T extends Uint8Array | Uint32Array | Int32Array | Float64Array>(array: T): T => {
      const next = new (array.constructor as new (n: number) => T)(capacity);
      next.set(array);
      return next;
    };
    this.ops = widen(this.ops);
    this.addresses = widen(this.addresses);
    this.sizes = widen(this.sizes);
    this.streams = widen(this.streams);
    this.locations = widen(this.locations);
    this.preexistingOf = widen(this.preexistingOf);
    if (this.stacks !== null) this.stacks = widen(this.stacks);
    if (this.times !== null) {
      const times = new Float64Array(capacity);
      times.fill(Number.NaN);
      times.set(this.times);
      this.times = times;
    }
  }
}

/**
 * An address from a recording: a non-negative integer, or a string in decimal or `0x` hex.
 * Returns NaN when it is neither.
 */
export function parseAddress(value: unknown): number {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : NaN;
  if (typeof value === 'bigint') {
    return value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : NaN;
  }
  if (typeof value !== 'string') return NaN;
  const text = value.trim();
  if (/^0x[0-9a-f]+$/i.test(text) || /^\d+$/.test(text)) {
    const parsed = Number(text);
    return Number.isSafeInteger(parsed) ? parsed : NaN;
  }
  return NaN;
}
