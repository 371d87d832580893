/**
 * A recording keyed by pointers (PyTorch snapshots and profiler traces, RMM logs) as a
 * {@link Trace}, each event written once: the reader appends what it reads to typed columns, and
 * those columns become the trace's, settled in place.
 *
 * ```
 *  add()     op, address, size, stream, location, time, stack     one row per entry, as read
 *  settle()  in order: an allocation gets the next block id, a free finds its block by address;
 *            rows that are no event (a free of the other kind, a mark) are dropped, the rest
 *            move down over them; marks (segment decisions, out-of-memory entries) are told
 *            where they fall among the events
 *  finish()  the blocks live before the window first, then the events: the trace
 * ```
 *
 * Recordings are windows: a free whose address was allocated before the window began has no
 * allocation to match. Such a block is modelled as live from the start: an allocation of the size
 * the free reports is placed before the first event (`meta.preexistingBlocks`, `meta.preexisting-
 * Bytes`), and so is a block the recording's end state holds that the window never allocated
 * ({@link PointerTrace.liveThroughout}).
 *
 * ```
 *  add(ALLOC, 0x7f00, 512) … add(FREE, 0x7e00, 4096)      (0x7e00 never allocated here)
 *  ⇒  Alloc(4096) [pre-existing]  Alloc(512) … Free(block 0)
 * ```
 */
import { AddressMap, NIL } from '@allot/blocks';
import { TraceFormatError, type TraceLocationUnit } from '../errors';
import { DEFAULT_MAX_EVENTS, EventKind, type Trace, type TraceMeta } from '../trace';
import { StackFrames, type StackTable } from './stack-table';

/** What a row is (a snapshot's action codes: see `snapshot-reader.ts`). */
export const ALLOC = 0;
/** A free that is one only when the recording frees at requests (see {@link SettlePlan.freeOp}). */
export const FREE_REQUESTED = 1;
/** A free that is one when the recording records completions. */
export const FREE_COMPLETED = 2;
/** A free. */
export const FREE = 3;
/** The first of the codes of rows that are no event (marks): {@link SettlePlan.mark} hears them. */
export const MARK = 4;

/** A block live when the window began. */
export interface PreexistingBlock {
  readonly address: number;
  /** Bytes requested. */
  readonly size: number;
  /** Dense stream id. */
  readonly stream: number;
  /** Its stack in the build's stack table (0 for none), when the recording states it. */
  readonly stack?: number;
  /** Bytes of the block, when the recording's end state holds it (see `addLiveAtEnd`). */
  readonly held?: number;
}

/** A block a recording's end state holds (see {@link PointerTrace.addLiveAtEnd}). */
export interface HeldBlock {
  readonly address: number;
  /** Bytes of the block, and bytes requested. */
  readonly size: number;
  readonly requested: number;
  /** The stream as recorded. */
  readonly stream: number;
  /** Its stack in the build's stack table, 0 for none. */
  readonly stack: number;
}

/** How {@link PointerTrace.settle} reads the rows. */
export interface SettlePlan {
  /** Which of FREE_REQUESTED and FREE_COMPLETED frees; the other is dropped. @defaultValue none */
  readonly freeOp?: number;
  /** Drops a free of 0 bytes of an address that is not live (a snapshot's). @defaultValue false */
  readonly dropEmptyFrees?: boolean;
  /** A mark (a row of code {@link MARK} or more) at row `row`, after `events` events. */
  mark?(row: number, events: number): void;
  /** What to say of row `row`'s address when it is no address (NaN). */
  badAddress?(row: number): [expected: string, found: string];
}

const INITIAL = 1024;

function grow<T extends Float64Array | Int32Array | Uint8Array | Uint32Array>(
  array: T,
  length: number,
  fill?: number,
): T {
  const next = new (array.constructor as new (n: number) => T)(length);
  const kept = Math.min(array.length, length);
  next.set(array.subarray(0, kept));
  if (fill !== undefined) next.fill(fill, kept);
  return next;
}

/** The rows of a recording, and the trace they settle into (see the module comment). */
export class PointerTrace {
  /** Rows so far; the columns hold them in `[0, length)`. */
  length = 0;
  op = new Uint8Array(INITIAL);
  address = new Float64Array(INITIAL);
  size = new Float64Array(INITIAL);
  /** The stream as recorded (any number that names it), made dense as the events settle. */
  stream = new Float64Array(INITIAL);
  /**
   * Where each row was read (a 1-based line, or an entry's index + 1); null while each row's is
   * its index + 1, as a snapshot's entries are (8 bytes an entry not held while they are read).
   */
  location: Float64Array | null = null;
  /** µs of each row (NaN where none was recorded); null until one is. */
  time: Float64Array | null = null;
  /** Stack of each row in the build's stack table (0 for none); null until one is. */
  stack: Int32Array | null = null;
  private readonly streamIds = new Map<number, number>();
  private readonly live = new AddressMap();
  private readonly preexisting: PreexistingBlock[] = [];
  /** Settled: events, their block ids (a pre-existing block's as -1 - its index) and streams. */
  private events = 0;
  private allocs = 0;
  private id: Int32Array | null = null;
  private dense: Uint32Array | null = null;
  /** Whether an event was recorded with its time, and an allocation with its stack. */
  private timed = false;
  private stacked = false;

  /**
   * @param source - label for error messages (a reader may name it better before settling).
   * @param unit - what a row's `location` counts.
   * @param maxEvents - most events, the leading allocations of pre-existing blocks counted, and
   *   most rows.
   */
  constructor(
    public source: string,
    private readonly unit: TraceLocationUnit,
    private readonly maxEvents = DEFAULT_MAX_EVENTS,
  ) {}

  /** Appends a row; returns its index. */
  add(
    op: number,
    address: number,
    size: number,
    stream: number,
    location: number,
    time = Number.NaN,
    stack = 0,
  ): number {
    const i = this.length;
    if (i === this.op.length) {
      if (i >= this.maxEvents) this.tooMany(location);
      this.reserve(Math.min(Math.ceil(i * 1.5), Math.max(this.maxEvents, INITIAL)));
    }
    this.op[i] = op;
    this.address[i] = address;
    this.size[i] = size;
    this.stream[i] = stream;
    if (this.location !== null) this.location[i] = location;
    else if (location !== i + 1) this.locations()[i] = location;
    if (!Number.isNaN(time)) {
      this.time ??= new Float64Array(this.op.length).fill(Number.NaN);
      this.time[i] = time;
    } else if (this.time !== null) this.time[i] = Number.NaN;
    if (stack !== 0) {
      this.stack ??= new Int32Array(this.op.length);
      this.stack[i] = stack;
    } else if (this.stack !== null) this.stack[i] = 0;
    this.length = i + 1;
    return i;
  }

  /** The dense id of stream `key`, the next one when it is new (ids start at 0). */
  streamId(key: number): number {
    let id = this.streamIds.get(key);
    if (id === undefined) {
      id = this.streamIds.size;
      this.streamIds.set(key, id);
    }
    return id;
  }

  /** The id {@link streamId} gave `key`, or -1 when no event was on that stream. */
  knownStreamId(key: number): number {
    return this.streamIds.get(key) ?? -1;
  }

  /** Events settled (see {@link settle}). */
  get eventCount(): number {
    return this.events;
  }

  /**
   * Settles the rows in order, in place (see the module comment): afterwards `[0, eventCount)` of
   * the columns are the events.
   *
   * @throws TraceFormatError at the row of an allocation at a live address, a free that matches no
   * block and states no size, an address that is none, or past the event limit.
   */
  settle(plan: SettlePlan = {}): void {
    const { op, address, size, time, stack, live } = this;
    const location = this.locations();
    const freeOp = plan.freeOp ?? -1;
    const id = (this.id = new Int32Array(this.op.length));
    let w = 0;
    for (let r = 0; r < this.length; r++) {
      const code = op[r]!;
      if (code >= MARK) {
        plan.mark?.(r, w);
        continue;
      }
      const isAlloc = code === ALLOC;
      if (!isAlloc && code !== FREE && code !== freeOp) continue;
      const at = address[r]!;
      if (Number.isNaN(at)) this.fail(r, ...(plan.badAddress?.(r) ?? ['an address', 'none']));
      const streamId = this.streamId(this.stream[r]!);
      const bytes = size[r]!;
      if (isAlloc) {
        if (bytes === 0 && plan.dropEmptyFrees) continue;
        this.checkRoom(w, r);
        if (!Number.isSafeInteger(bytes) || bytes <= 0) {
          this.fail(r, 'a positive integer size', String(bytes));
        }
        const earlier = live.get(at);
        if (earlier !== NIL) {
          this.fail(
            r,
            `an allocation at an address that is not live (0x${at.toString(16)} was allocated ` +
              `at ${this.unit} ${location[earlier]} and not freed since)`,
            `a second allocation at 0x${at.toString(16)}`,
          );
        }
        live.set(at, w);
        if (stack !== null) {
          stack[this.allocs] = stack[r]!;
          if (stack[r]! > 0) this.stacked = true;
        }
        id[w] = this.allocs++;
        this.setStream(w, streamId);
      } else {
        const block = live.get(at);
        if (block === NIL && bytes === 0 && plan.dropEmptyFrees) continue;
        this.checkRoom(w, r);
        if (block === NIL) {
          if (!Number.isSafeInteger(bytes) || bytes <= 0) {
            this.fail(
              r,
              'the free of a live address (or its size, to model a block allocated before the ' +
                'recording)',
              `a free of 0x${at.toString(16)}, which is not live`,
            );
          }
          id[w] = -1 - this.preexisting.length;
          this.preexisting.push({ address: at, size: bytes, stream: streamId });
        } else {
          live.take(at);
          id[w] = id[block]!;
        }
        size[r] = block === NIL ? bytes : size[block]!;
        this.setStream(w, 0);
      }
      op[w] = isAlloc ? EventKind.Alloc : EventKind.Free;
      size[w] = size[r]!;
      location[w] = location[r]!;
      if (time !== null) {
        time[w] = time[r]!;
        if (Number.isFinite(time[w]!)) this.timed = true;
      }
      w++;
    }
    this.events = w;
  }

  /**
   * The blocks the recording's end state holds (after settling): each that the window did not
   * allocate, and so was live throughout it, gets a leading allocation (of the bytes it
   * requested) like a pre-existing block that is freed, in the order given. Then the blocks live
   * at the start are put in address order (see {@link orderPreexistingByAddress}).
   */
  addLiveAtEnd(blocks: Iterable<HeldBlock>): void {
    for (const block of blocks) {
      if (this.live.has(block.address)) continue;
      const { address, requested, stack } = block;
      this.preexisting.push({
        address,
        size: requested,
        stream: this.streamId(block.stream),
        ...(stack > 0 ? { stack } : {}),
        held: block.size,
      });
    }
    this.orderPreexistingByAddress();
  }

  /**
   * A block live for the whole window, allocated before it and never freed in it, of `size` bytes
   * (at no address, when unknown): it gets a leading allocation.
   */
  liveThroughout(address: number, size: number, stream: number): void {
    this.preexisting.push({ address, size, stream });
  }

  /**
   * Blocks live when the window began, in the order of their leading allocations: block `i` of the
   * built trace is `preexistingBlocks()[i]`.
   */
  preexistingBlocks(): readonly PreexistingBlock[] {
    return this.preexisting;
  }

  /**
   * Puts the blocks live at the start in address order (their leading allocations follow it), the
   * order in which a program that filled its memory from the bottom allocated them.
   */
  orderPreexistingByAddress(): void {
    const blocks = this.preexisting;
    const order = blocks.map((_, i) => i).sort((x, y) => blocks[x]!.address - blocks[y]!.address);
    const rank = new Int32Array(order.length);
    order.forEach((old, i) => {
      rank[old] = i;
    });
    const sorted = order.map((old) => blocks[old]!);
    for (let i = 0; i < sorted.length; i++) blocks[i] = sorted[i]!;
    const id = this.id!;
    for (let i = 0; i < this.events; i++) if (id[i]! < 0) id[i] = -1 - rank[-1 - id[i]!]!;
  }

  /**
   * The trace: the leading allocations of the blocks live at the start, then the events, in the
   * settled columns moved up to make room for them. `stackTable` is the table the stacks index,
   * for {@link Trace.frames}.
   */
  finish(name: string, meta: TraceMeta = {}, stackTable?: StackTable): Trace {
    const pre = this.preexisting;
    const leading = pre.length;
    const length = leading + this.events;
    if (length > this.maxEvents) this.tooMany(this.locationOf(Math.max(0, this.events - 1)));
    if (length > this.op.length) this.reserve(length);
    const { op, size, time } = this;
    const location = this.locations();
    const id = this.id!;
    // The events, moved up past the leading allocations, their block ids final.
    for (let i = this.events - 1; i >= 0; i--) {
      const to = i + leading;
      op[to] = op[i]!;
      size[to] = size[i]!;
      location[to] = location[i]!;
      const block = id[i]!;
      id[to] = block >= 0 ? leading + block : -1 - block;
      if (this.dense !== null) this.dense[to] = this.dense[i]!;
      if (time !== null) time[to] = time[i]!;
    }
    let preexistingBytes = 0;
    let stacked = false;
    for (let i = 0; i < leading; i++) {
      const block = pre[i]!;
      op[i] = EventKind.Alloc;
      id[i] = i;
      size[i] = block.size;
      location[i] = 0;
      preexistingBytes += block.size;
      stacked ||= (block.stack ?? 0) > 0;
      this.setStream(i, block.stream);
    }
    const frames = this.framesOf(leading, stackTable, stacked);
    // Views of the columns, as long as the trace: its events, not copied.
    return {
      name,
      length,
      allocCount: leading + this.allocs,
      kind: op.subarray(0, length),
      id: id.subarray(0, length),
      size: size.subarray(0, length),
      alignment: new Uint32Array(length),
      ...(this.dense !== null ? { stream: this.dense.subarray(0, length) } : {}),
      meta: {
        ...meta,
        streams: Math.max(1, this.streamIds.size),
        preexistingBlocks: leading,
        preexistingBytes,
      },
      ...(this.timed ? { time: this.timeline(length, leading) } : {}),
      ...(frames !== null ? { frames } : {}),
      location: location.subarray(0, length),
    };
  }

  /** Each block's stack (the pre-existing ones', then the allocations' moved up), or null. */
  private framesOf(leading: number, table: StackTable | undefined, stacked: boolean) {
    if (table === undefined || (!this.stacked && !stacked)) return null;
    const blocks = leading + this.allocs;
    let stack = this.stack ?? new Int32Array(blocks);
    if (stack.length < blocks) stack = grow(stack, blocks);
    stack.copyWithin(leading, 0, this.allocs);
    for (let i = 0; i < leading; i++) stack[i] = this.preexisting[i]!.stack ?? 0;
    return new StackFrames(table, stack.subarray(0, blocks));
  }

  /**
   * The times of the trace's `length` events, in place: the leading events take the first time
   * recorded, an event without one the time of the event before it.
   */
  private timeline(length: number, leading: number): Float64Array {
    const time = this.time!;
    let last = 0;
    for (let i = leading; i < length; i++) {
      if (Number.isFinite(time[i]!)) {
        last = time[i]!;
        break;
      }
    }
    for (let i = 0; i < length; i++) {
      if (i >= leading && Number.isFinite(time[i]!)) last = time[i]!;
      time[i] = last;
    }
    return time.subarray(0, length);
  }

  /** Event `at`'s stream in the trace's stream column (made at the first that is not 0). */
  private setStream(at: number, stream: number): void {
    if (stream !== 0) this.dense ??= new Uint32Array(this.op.length);
    if (this.dense !== null) this.dense[at] = stream;
  }

  private checkRoom(events: number, row: number): void {
    if (events + this.preexisting.length >= this.maxEvents) this.tooMany(this.locationOf(row));
  }

  /** Fails: past the event limit at `location`. */
  private tooMany(location: number): never {
    throw new TraceFormatError(
      this.source,
      location,
      `at most ${this.maxEvents.toLocaleString('en-US')} events (the event limit)`,
      'more events',
      this.unit,
    );
  }

  private fail(row: number, expected: string, found: string): never {
    throw new TraceFormatError(this.source, this.locationOf(row), expected, found, this.unit);
  }

  /** Where row `row` was read. */
  private locationOf(row: number): number {
    return this.location === null ? row + 1 : this.location[row]!;
  }

  /** The rows' locations, made when each was its index + 1 until now. */
  private locations(): Float64Array {
    if (this.location === null) {
      this.location = new Float64Array(this.op.length);
      for (let r = 0; r < this.length; r++) this.location[r] = r + 1;
    }
    return this.location;
  }

  /** Room for `capacity` rows in every column. */
  private reserve(capacity: number): void {
    this.op = grow(this.op, capacity);
    this.address = grow(this.address, capacity);
    this.size = grow(this.size, capacity);
    this.stream = grow(this.stream, capacity);
    if (this.location !== null) this.location = grow(this.location, capacity);
    if (this.time !== null) this.time = grow(this.time, capacity, Number.NaN);
    if (this.stack !== null) this.stack = grow(this.stack, capacity);
    if (this.id !== null) this.id = grow(this.id, capacity);
    if (this.dense !== null) this.dense = grow(this.dense, capacity);
  }
}
