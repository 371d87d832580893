/**
 * The compact event representation every workload and trace reader produces, and `replay` consumes.
 *
 * A trace is a sequence of events in parallel typed arrays (structure of arrays), so replaying one
 * allocates nothing per event and a million events cost about 21 MB:
 *
 * ```
 * event i:  kind[i]       Uint8    EventKind.Alloc | EventKind.Free
 *           id[i]         Int32    block id
 *           size[i]       Float64  bytes requested (for a free: the size of the block it frees)
 *           alignment[i]  Uint32   alignment requested, 0 = the allocator's default
 *           stream[i]     Uint32   optional: stream of an allocation (dense ids from 0), for traces
 *                                  recorded on several CUDA streams; absent when every event is on 0
 * ```
 *
 * Ids are dense: the k-th `Alloc` event (counting from 0) creates block `k`, and each block is freed
 * at most once, later. Readers map whatever ids a file uses (pointers, strings, reused numbers) onto
 * this scheme, so `replay` can keep addresses in a `Float64Array` indexed by id instead of a `Map`.
 * Blocks still live at the end of a trace are simply not freed.
 *
 * Build traces with {@link TraceBuilder}, which enforces these rules.
 */
import { TraceFormatError } from './errors';

/** Event kinds stored in {@link Trace.kind}. */
export const EventKind = {
  Alloc: 0,
  Free: 1,
} as const;
export type EventKind = (typeof EventKind)[keyof typeof EventKind];

/** Descriptive metadata: what produced the trace, its parameters, derived budgets. */
export type TraceMeta = Readonly<Record<string, string | number | boolean>>;

/** A replayable allocation trace (see the module comment for the layout). */
export interface Trace {
  /** Short label, for example `random-mix-5000` or `gcc-hello.trace`. */
  readonly name: string;
  /** Number of events. The typed arrays may be longer; only `[0, length)` is meaningful. */
  readonly length: number;
  /** Number of `Alloc` events, which is also the number of block ids. */
  readonly allocCount: number;
  readonly kind: Uint8Array;
  readonly id: Int32Array;
  readonly size: Float64Array;
  readonly alignment: Uint32Array;
  /**
   * Stream of each allocation event (dense ids, 0 = the default stream); free events hold 0, a block
   * goes back to the stream it was allocated on. Absent when every allocation is on stream 0.
   */
  readonly stream?: Uint32Array;
  /**
   * Generator parameters and notes. Well-known keys: `generator`, `seed`, `source`, and
   * `steadyFrom` (index of the first event of the steady state; benchmarks time from there).
   */
  readonly meta: TraceMeta;
  /**
   * The allocator's state when the recording began, when the recording states it (PyTorch memory
   * snapshots, profiler traces): events `[0, start.events)` allocate the blocks live at the start,
   * so an allocator that cannot be seeded replays them like any other, and a caching pool restores
   * the segments instead and begins at `start.events`.
   */
  readonly start?: StartState;
  /**
   * The recorded allocator's own segment decisions inside the window (PyTorch snapshots), in order:
   * the bytes of each `cudaMalloc` (or expandable-segment map), negative for each expandable-segment
   * unmap under memory pressure, and the index of the first event at or after it (the allocation it
   * served). A segment's `cudaFree` is not a decision of this list.
   */
  readonly recordedSegments?: readonly RecordedSegment[];
  /**
   * Segments the recorded allocator gave back in the window (PyTorch snapshots' `segment_free`),
   * each before trace event `event[i]`, of `bytes[i]` bytes: `torch.cuda.empty_cache()`, the release
   * before a retry when `cudaMalloc` failed, garbage collection. A replay gives back as much at the
   * same places where the allocator can (`ReplayTarget.release`).
   */
  readonly releases?: {
    readonly event: Int32Array;
    readonly bytes: Float64Array;
    /** The recorded allocator's reserved bytes just before each was given back. */
    readonly reservedBefore: Float64Array;
  };
  /**
   * The out-of-memory errors the recording holds (PyTorch snapshots' `oom` entries), in order: what
   * was asked, what the driver had free, and PyTorch's own figures at that moment.
   */
  readonly recordedOoms?: readonly RecordedOom[];
  /**
   * When each event happened, in µs on the recording's clock (PyTorch snapshots: `time_us`; profiler
   * traces: `ts`), when the recording states it. Leading events of a starting state take the time of
   * the first recorded event.
   */
  readonly time?: Float64Array;
  /**
   * Where each event was read, when a reader states it: the recording's own position of the entry
   * (a snapshot's trace entry index + 1, a text trace's line number), 0 for the leading events of a
   * starting state.
   */
  readonly location?: Float64Array;
  /**
   * The recorded allocator's reserved bytes just after each event (snapshots: the reserved bytes at
   * the start plus the segment allocations and maps, less the frees and unmaps, so far; profiler
   * traces: each event's `Total Reserved`), for setting PyTorch's own line beside a replay's.
   */
  readonly recordedReserved?: Float64Array;
  /** Stack frames of allocations by block id, innermost first, when the recording has them. */
  readonly frames?: ReadonlyMap<number, readonly StackFrame[]>;
  /**
   * A state dump's segments and blocks: a PyTorch snapshot whose device recorded no allocation
   * (`torch.cuda.memory._snapshot()` without `_record_memory_history`, or at an out-of-memory
   * error). Such a trace has no history to replay: its events allocate the dump's live blocks, one
   * each, in address order, and it has no {@link start}, so an allocator that replays it places
   * those blocks from empty: an estimate of what the same blocks need, not a replay.
   */
  readonly dump?: StateDump;
}

/** What a state dump holds (see {@link Trace.dump}). */
export interface StateDump {
  /** Segments at the moment of the dump, in address order, every block of each (free ones too). */
  readonly segments: readonly DumpSegment[];
  /** Entries the device's trace holds, none an allocation (a `snapshot` mark, a segment freed). */
  readonly entries: number;
}

/** A segment of a state dump. */
export interface DumpSegment {
  /** Address as recorded. */
  readonly address: number;
  /** Bytes reserved (`total_size`; for an expandable segment, the bytes mapped). */
  readonly size: number;
  readonly pool: 'small' | 'large';
  /** Dense stream id, as in {@link Trace.stream}. */
  readonly stream: number;
  readonly expandable: boolean;
  /** Its blocks, in address order. */
  readonly blocks: readonly DumpBlock[];
}

/**
 * A block of a state dump: `allocated` (a tensor's, `active_allocated`), `pending-free` (freed by
 * the program, still in use by another stream: `active_pending_free`) or `free` (cached, `inactive`).
 */
export type DumpBlockState = 'allocated' | 'pending-free' | 'free';

/** A block of a {@link DumpSegment}. */
export interface DumpBlock {
  /** Bytes from the segment's address. */
  readonly offset: number;
  /** Bytes of the block (rounded, as the allocator holds it). */
  readonly size: number;
  /** Bytes requested (the block's size when not recorded). */
  readonly requested: number;
  readonly state: DumpBlockState;
  /** Block id of its allocation in the trace (a live block's), -1 for a free block. */
  readonly id: number;
}

/** One frame of a recorded stack (PyTorch's `{filename, line, name}`). */
export interface StackFrame {
  readonly filename: string;
  readonly line: number;
  readonly name: string;
}

/** One segment decision of the recorded allocator (see {@link Trace.recordedSegments}). */
export interface RecordedSegment {
  readonly event: number;
  readonly size: number;
  /** The segment's (or mapped range's) device address, as recorded. */
  readonly address?: number;
}

/** One recorded out-of-memory error (see {@link Trace.recordedOoms}). */
export interface RecordedOom {
  /** Index of the `oom` entry in its device's trace (`device_traces[d]`, from 0). */
  readonly entry: number;
  /** Index of the first trace event after it (the allocation PyTorch could not serve comes later). */
  readonly event: number;
  /** Bytes requested. */
  readonly sizeBytes: number;
  /** The stream as recorded (`cudaStream_t`). */
  readonly stream: number;
  /** The stream as the trace's events number them ({@link Trace.stream}), or -1 when none was. */
  readonly streamIndex: number;
  /** µs on the recording's clock, when recorded. */
  readonly timeUs?: number;
  /** What the driver reported free on the device (`device_free`), when recorded and valid. */
  readonly deviceFreeBytes?: number;
  /** PyTorch's reserved bytes then: the window's start plus its segment decisions before the entry. */
  readonly reservedBytes: number;
  /** Bytes live then (allocated and not yet freed, the starting state included). */
  readonly allocatedBytes: number;
  /**
   * The memory PyTorch could use then: reserved plus `device_free` (absent without a valid
   * `device_free`).
   */
  readonly capacityBytes?: number;
  /** The stack of the failing request, innermost first, when recorded. */
  readonly frames?: readonly StackFrame[];
  /** What is wrong with the entry (a missing or negative `device_free`, a size of 0), if anything. */
  readonly problem?: string;
}

/** Segments and live blocks at the start of a recording (see {@link Trace.start}). */
export interface StartState {
  /** Leading events that allocate the blocks live at the start (block ids `0 … events − 1`). */
  readonly events: number;
  /** Segments held at the start, in address order. */
  readonly segments: readonly StartSegment[];
  /** How the state was found, for reports: `exact` (from the recording) or `estimated`. */
  readonly fidelity: 'exact' | 'estimated';
}

/** A segment held at the start of a recording. */
export interface StartSegment {
  /** Address as recorded. */
  readonly address: number;
  /** Bytes reserved (for an expandable segment, the bytes mapped). */
  readonly size: number;
  readonly pool: 'small' | 'large';
  /** Dense stream id, as in {@link Trace.stream}. */
  readonly stream: number;
  readonly expandable: boolean;
  /** Blocks live at the start, in address order. */
  readonly blocks: readonly StartBlock[];
}

/** A block live at the start of a recording. */
export interface StartBlock {
  /** Block id in the trace (allocated by one of the leading events). */
  readonly id: number;
  /** Bytes from the segment's address. */
  readonly offset: number;
  /** Bytes requested (the size of its leading allocation event). */
  readonly requested: number;
  /** Bytes of the block as recorded, or undefined when only the request is known. */
  readonly size?: number;
}

const INITIAL_CAPACITY = 1024;

/**
 * Most events a {@link TraceBuilder} takes unless told otherwise. A trace costs about 25 bytes per
 * event while it is built, and a reader keyed by pointers several hundred more while it reads (an
 * RMM log of 3 M live allocations takes 1 GB), so 2 M events keep reading hostile input within
 * 1.5 GB. PyTorch records 100,000 entries per device by default. Raise it for larger real traces.
 */
export const DEFAULT_MAX_EVENTS = 2_000_000;
const NOT_LIVE = -1;

/** Accumulates events and checks them; {@link TraceBuilder.build} returns a right-sized {@link Trace}. */
export class TraceBuilder {
  private kinds = new Uint8Array(INITIAL_CAPACITY);
  private ids = new Int32Array(INITIAL_CAPACITY);
  private sizes = new Float64Array(INITIAL_CAPACITY);
  private alignments = new Uint32Array(INITIAL_CAPACITY);
  /** Created on the first allocation on a stream other than 0. */
  private streams: Uint32Array | null = null;
  /** Size of each live block by id, `NOT_LIVE` once freed. */
  private liveSizes = new Float64Array(INITIAL_CAPACITY);
  private events = 0;
  private allocs = 0;
  private live = 0;

  /**
   * @param source - label used in error messages (a file name, a generator name).
   * @param maxEvents - most events; one more throws TraceFormatError. @defaultValue {@link DEFAULT_MAX_EVENTS}
   * @param capacity - events expected: room for them at once, and a trace of exactly that many
   *   is built without copying its columns.
   */
  constructor(
    private readonly source = 'trace',
    private readonly maxEvents = DEFAULT_MAX_EVENTS,
    capacity = INITIAL_CAPACITY,
  ) {
    const room = Math.max(1, Math.min(capacity, maxEvents));
    if (room !== INITIAL_CAPACITY) {
      this.kinds = new Uint8Array(room);
      this.ids = new Int32Array(room);
      this.sizes = new Float64Array(room);
      this.alignments = new Uint32Array(room);
    }
  }

  /** Number of events so far. */
  get length(): number {
    return this.events;
  }

  /** Number of blocks allocated so far (the id the next `alloc` returns). */
  get allocCount(): number {
    return this.allocs;
  }

  /** Number of blocks allocated and not yet freed. */
  get liveCount(): number {
    return this.live;
  }

  /** Whether block `id` was allocated and is not yet freed. */
  isLive(id: number): boolean {
    return id >= 0 && id < this.allocs && this.liveSizes[id]! !== NOT_LIVE;
  }

  /** Size of live block `id` in bytes. */
  sizeOf(id: number): number {
    return this.liveSizes[id]!;
  }

  /**
   * Appends an allocation of `size` bytes and returns its block id.
   *
   * @param size - bytes, a positive safe integer.
   * @param alignment - a power of two, or 0 for the allocator's default. @defaultValue 0
   * @param stream - dense stream id (a non-negative integer below 2^32). @defaultValue 0
   * @throws TraceFormatError when `size` or `alignment` is invalid.
   */
  alloc(size: number, alignment = 0, stream = 0): number {
    if (!Number.isSafeInteger(size) || size <= 0) {
      throw new TraceFormatError(
        this.source,
        this.events + 1,
        'a positive integer size',
        String(size),
      );
    }
    if (
      !Number.isInteger(alignment) ||
      alignment < 0 ||
      alignment > 0x8000_0000 ||
      (alignment !== 0 && 2 ** Math.round(Math.log2(alignment)) !== alignment)
    ) {
      throw new TraceFormatError(
        this.source,
        this.events + 1,
        'an alignment that is 0 or a power of two up to 2^31',
        String(alignment),
      );
    }
    if (!Number.isInteger(stream) || stream < 0 || stream > 0xffff_ffff) {
      throw new RangeError(`stream must be an integer in [0, 2^32), got ${stream}`);
    }
    this.reserveEvent();
    if (this.allocs === this.liveSizes.length) this.liveSizes = grow(this.liveSizes);
    const id = this.allocs++;
    this.liveSizes[id] = size;
    this.live++;
    const at = this.events++;
    this.kinds[at] = EventKind.Alloc;
    this.ids[at] = id;
    this.sizes[at] = size;
    this.alignments[at] = alignment;
    if (stream !== 0) {
      this.streams ??= new Uint32Array(this.kinds.length);
      this.streams[at] = stream;
    } else if (this.streams) {
      this.streams[at] = 0;
    }
    return id;
  }

  /**
   * Appends the free of live block `id`.
   *
   * @throws TraceFormatError when `id` was never allocated or is already free.
   */
  free(id: number): void {
    if (!this.isLive(id)) {
      const state = id >= 0 && id < this.allocs ? 'already freed' : 'never allocated';
      throw new TraceFormatError(
        this.source,
        this.events + 1,
        'the id of a live block',
        `block ${id} (${state})`,
      );
    }
    this.reserveEvent();
    const at = this.events++;
    this.kinds[at] = EventKind.Free;
    this.ids[at] = id;
    this.sizes[at] = this.liveSizes[id]!;
    this.alignments[at] = 0;
    if (this.streams) this.streams[at] = 0;
    this.liveSizes[id] = NOT_LIVE;
    this.live--;
  }

  /**
   * Returns the trace built so far, with arrays trimmed to its length. The builder stays usable:
   * full arrays are handed over as they are, since the next event grows the builder's into new
   * ones.
   */
  build(name: string, meta: TraceMeta = {}): Trace {
    const n = this.events;
    const trim = <T extends Uint8Array | Int32Array | Float64Array | Uint32Array>(array: T): T =>
      array.length === n ? array : (array.slice(0, n) as T);
    return {
      name,
      length: n,
      allocCount: this.allocs,
      kind: trim(this.kinds),
      id: trim(this.ids),
      size: trim(this.sizes),
      alignment: trim(this.alignments),
      ...(this.streams ? { stream: trim(this.streams) } : {}),
      meta,
    };
  }

  private reserveEvent(): void {
    if (this.events < this.kinds.length) return;
    if (this.events >= this.maxEvents) {
      throw new TraceFormatError(
        this.source,
        this.events + 1,
        `at most ${this.maxEvents.toLocaleString('en-US')} events (the event limit)`,
        'more events',
        'event',
      );
    }
    this.kinds = grow(this.kinds, this.maxEvents);
    this.ids = grow(this.ids, this.maxEvents);
    this.sizes = grow(this.sizes, this.maxEvents);
    this.alignments = grow(this.alignments, this.maxEvents);
    if (this.streams) this.streams = grow(this.streams, this.maxEvents);
  }
}

function grow<T extends Uint8Array | Int32Array | Uint32Array | Float64Array>(
  array: T,
  most = Number.POSITIVE_INFINITY,
): T {
  const length = Math.max(array.length + 1, Math.min(array.length * 2, most));
  const bigger = new (array.constructor as new (length: number) => T)(length);
  bigger.set(array);
  return bigger;
}

/** Figures about a trace that do not depend on an allocator. */
export interface TraceSummary {
  readonly events: number;
  readonly allocs: number;
  readonly frees: number;
  /** Largest sum of live requested bytes at any point. */
  readonly peakLiveBytes: number;
  /** Largest number of live blocks at any point. */
  readonly peakLiveBlocks: number;
  /** Blocks never freed. */
  readonly liveAtEnd: number;
  /** Sum of all requested bytes (what a bump allocator consumes, before alignment). */
  readonly totalAllocatedBytes: number;
  readonly minSize: number;
  readonly maxSize: number;
  /** Largest alignment requested (0 when every request uses the default). */
  readonly maxAlignment: number;
}

/** Options of {@link peakLiveBytes}: count only requests in a size band. */
export interface SizeFilter {
  /** Count only requests of at least this many bytes. @defaultValue 0 */
  readonly minSize?: number;
  /** Count only requests of at most this many bytes. @defaultValue Infinity */
  readonly maxSize?: number;
}

/**
 * Largest sum of live requested bytes at any point of `trace`, optionally only over requests in a
 * size band (a hybrid that routes by size uses that to split its capacity).
 */
export function peakLiveBytes(trace: Trace, filter: SizeFilter = {}): number {
  const minSize = filter.minSize ?? 0;
  const maxSize = filter.maxSize ?? Number.POSITIVE_INFINITY;
  const { kind, size, length } = trace;
  let live = 0;
  let peak = 0;
  for (let i = 0; i < length; i++) {
    const bytes = size[i]!;
    if (bytes < minSize || bytes > maxSize) continue;
    if (kind[i] === EventKind.Alloc) {
      live += bytes;
      if (live > peak) peak = live;
    } else {
      live -= bytes;
    }
  }
  return peak;
}

/** Counts, sizes and peaks of a trace in one pass. */
export function summarizeTrace(trace: Trace): TraceSummary {
  const { kind, size, alignment, length } = trace;
  let live = 0;
  let peak = 0;
  let blocks = 0;
  let peakBlocks = 0;
  let allocs = 0;
  let total = 0;
  let minSize = Number.POSITIVE_INFINITY;
  let maxSize = 0;
  let maxAlignment = 0;
  for (let i = 0; i < length; i++) {
    const bytes = size[i]!;
    if (kind[i] === EventKind.Alloc) {
      allocs++;
      total += bytes;
      live += bytes;
      blocks++;
      if (live > peak) peak = live;
      if (blocks > peakBlocks) peakBlocks = blocks;
      if (bytes < minSize) minSize = bytes;
      if (bytes > maxSize) maxSize = bytes;
      if (alignment[i]! > maxAlignment) maxAlignment = alignment[i]!;
    } else {
      live -= bytes;
      blocks--;
    }
  }
  return {
    events: length,
    allocs,
    frees: length - allocs,
    peakLiveBytes: peak,
    peakLiveBlocks: peakBlocks,
    liveAtEnd: blocks,
    totalAllocatedBytes: total,
    minSize: allocs === 0 ? 0 : minSize,
    maxSize,
    maxAlignment,
  };
}
