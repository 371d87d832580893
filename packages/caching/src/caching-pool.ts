/**
 * cachingPool: a growing pool over a memory source with the policy of PyTorch's CUDA caching
 * allocator (`c10/cuda/CUDACachingAllocator.cpp`), written from its documented behaviour.
 *
 * ```
 *  allocate(size) ──► round (512 B, or power-of-two divisions) ──► pool: small (≤ 1 MiB) | large
 *        │
 *        ▼   best fit in the (owner, pool, stream) index, keyed (size, address)
 *  ┌───────────────────────────── segment from the source ─────────────────────────────┐
 *  │ live 4 KiB │ free 12 KiB (cached) │ live 1 MiB │ pending free │ free remainder ... │
 *  └────────────────────────────────────────────────────────────────────────────────────┘
 *   blocks of a segment are linked in address order; a freed block merges with free neighbours
 * ```
 *
 * Policy, in PyTorch's terms:
 * - Sizes round up to 512 B (or to `roundup_power2_divisions` steps above 512 B × divisions).
 *   Blocks ≤ 1 MiB live in the small pool, in 2 MiB segments; larger ones in the large pool:
 *   requests under 10 MiB take 20 MiB segments, larger ones a segment rounded up to 2 MiB.
 * - Best fit: the smallest cached block of the same pool and stream that holds the size, lowest
 *   address on ties. A block ≥ `max_split_size` serves only requests ≥ `max_split_size` that it
 *   exceeds by less than `max_non_split_rounding`.
 * - Splitting: a small-pool remainder ≥ 512 B is split off; a large-pool remainder is split when it
 *   is > 1 MiB and the request is < `max_split_size` (with expandable segments: any remainder ≥ 512 B).
 * - A freed block used on other streams (`recordStream`) becomes reusable only when the source says
 *   those streams' work is done; until then it is pending (neither allocated nor free).
 * - A cache miss walks PyTorch's out-of-memory path: free-memory callbacks, garbage collection of
 *   old cached blocks above the threshold, a fresh segment, releasing oversize cached blocks and
 *   retrying, releasing every unused cached segment and retrying, and only then `null` (or the
 *   familiar out-of-memory error from {@link CachingPool.allocateOrThrow}).
 * - With `expandable_segments` and a source that can `grow`, each pool and stream has one segment
 *   that grows in place (2 MiB pages for small, 20 MiB for large) instead of acquiring new ones.
 *
 * Beyond PyTorch: `release(bytes)` frees only as much as asked, preferring the single smallest
 * segment that covers it; segments unused for `decayMs` go back to the source (jemalloc's decay).
 *
 * Hot path: a cache hit is one ordered-index lookup; when the block splits, the remainder keeps the
 * block's slot and index entry and is rekeyed in place while its order holds (a predecessor check),
 * so nothing is removed or inserted. A free merging with a cached neighbour likewise grows that
 * neighbour's key in place (a successor check); only a free with no cached neighbour inserts. Then
 * an address-table insert or removal and a few batched counter stores (`PoolCounters`); no object,
 * array or closure is allocated.
 */
import type { OrderedIndex } from '@allot/blocks';
import {
  type Allocator,
  alignUp,
  checkRequest,
  InvalidArgumentError,
  InvalidFreeError,
  type Layout,
  type MemorySource,
  OutOfMemoryError,
  type Region,
  type Usage,
} from '@allot/core';
import {
  diagnose,
  flattenPoolStats,
  type MemoryStats,
  type PoolLayoutBlock,
  type PoolLayoutSegment,
  type PoolStatsReport,
  type PoolStatsSource,
  pickleFloat,
  type StatsSink,
} from '@allot/stats';
import { AddressTable } from './address-table';
import {
  type AllocatorSettings,
  allocationSize,
  allocConfFromEnv,
  parseAllocConf,
  roundSize,
} from './alloc-conf';
import { BlockState, BlockStore, NIL } from './block-store';
import {
  LARGE_BUFFER,
  MAX_ROUNDED_SIZE,
  MIN_BLOCK_SIZE,
  SMALL_BUFFER,
  SMALL_SIZE,
} from './constants';
import { formatAllocConf } from './format-alloc-conf';
import { outOfMemoryMessage } from './oom-message';
import { Family, PoolCounters } from './pool-counters';
import { type FreeLists, PoolOwner, type Segment } from './pool-owner';
import { checkPoolState, type PoolStateSegment } from './pool-state';
import { isStreamOrderedSource, type Stream, type StreamEvents } from './stream-source';

/** Options of {@link cachingPool}. */
export interface CachingPoolOptions {
  /** Where segments come from. */
  readonly source: MemorySource;
  /**
   * Knobs in `PYTORCH_CUDA_ALLOC_CONF` syntax, for example
   * `"max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,>:8],expandable_segments:True"`.
   * When absent, the `ALLOT_ALLOC_CONF` environment variable is read (at creation, not at import).
   * @defaultValue process.env.ALLOT_ALLOC_CONF ?? ''
   */
  readonly config?: string;
  /**
   * The knobs as typed settings (from `parseAllocConf`, or built in code); takes precedence over
   * `config`, and the pool's `config` becomes `formatAllocConf(settings)`.
   */
  readonly settings?: AllocatorSettings;
  /** Environment read when neither `settings` nor `config` is given. @defaultValue process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Total bytes of the memory behind the source (a GPU's memory): the base of the memory fraction
   * and the "total capacity" of the out-of-memory message.
   * @defaultValue Infinity (not stated)
   */
  readonly totalMemory?: number;
  /**
   * Fraction (0, 1] of `totalMemory` the pool may reserve, like
   * `torch.cuda.set_per_process_memory_fraction`; overrides `per_process_memory_fraction`. Needs
   * `totalMemory`. Garbage collection (`garbage_collection_threshold`) runs only under a fraction.
   * @defaultValue no cap
   */
  readonly memoryFraction?: number;
  /**
   * Segments entirely free for this many milliseconds go back to the source (checked when a segment
   * becomes free, on cache misses and by {@link CachingPool.decay}). Absent: never.
   * @defaultValue undefined
   */
  readonly decayMs?: number;
  /** Clock for `decayMs`, in milliseconds. @defaultValue performance.now */
  readonly clock?: () => number;
}

/**
 * Called on a cache miss before anything is released; returns whether it freed memory of this pool
 * (then the search is retried). PyTorch's `FreeMemoryCallback`.
 */
export type FreeMemoryCallback = (request: {
  readonly size: number;
  readonly stream: Stream;
}) => boolean;

/** A scope that routes allocations to a private pool until disposed (`using scope = ...`). */
export interface PrivatePoolScope extends Disposable {
  readonly pool: PrivatePool;
  /** Ends the scope (same as disposing it); allocations go where they went before. */
  close(): void;
}

interface PendingEvent {
  readonly event: unknown;
  readonly slot: number;
}

/** What a failed request looked like, for the error built after it. */
interface Failure {
  readonly size: number;
  readonly alignment: number;
  readonly allocationSize: number;
}

const NO_CAP = Number.POSITIVE_INFINITY;
/**
 * Address space an expandable segment can still grow into, as best fit weighs it: far more than any
 * block (PyTorch reserves the device's whole memory per expandable segment).
 */
const UNMAPPED_REACH = 2 ** 50;

function checkStream(stream: number): void {
  if (!Number.isSafeInteger(stream) || stream < 0) {
    throw new InvalidArgumentError('stream', stream, 'a non-negative safe integer (0: default)');
  }
}

function hex(address: number): string {
  return Number.isFinite(address) ? `0x${address.toString(16)}` : String(address);
}

/**
 * Gives cached block `id` the smaller key (size, address): in place when its predecessor still sorts
 * before it (the order after it cannot change), else by removal and insertion.
 */
function shrinkKey(index: OrderedIndex, id: number, size: number, address: number): void {
  const before = index.predecessor(id);
  if (before !== NIL) {
    const p = index.primary(before);
    if (p > size || (p === size && index.secondary(before) > address)) {
      index.remove(id);
      index.insert(id, size, address, size);
      return;
    }
  }
  index.updateInPlace(id, size, address, size);
}

/**
 * Gives cached block `id` the larger key (size, address): in place when its successor still sorts
 * after it, else by removal and insertion.
 */
function growKey(index: OrderedIndex, id: number, size: number, address: number): void {
  const after = index.successor(id);
  if (after !== NIL) {
    const p = index.primary(after);
    if (p < size || (p === size && index.secondary(after) < address)) {
      index.remove(id);
      index.insert(id, size, address, size);
      return;
    }
  }
  index.updateInPlace(id, size, address, size);
}

/** Makes a {@link CachingPool}. */
export function cachingPool(options: CachingPoolOptions): CachingPool {
  return new CachingPool(options);
}

export class CachingPool implements Allocator, PoolStatsSource {
  /** Every address is a multiple of this (PyTorch's 512 B block granularity). */
  readonly alignment = MIN_BLOCK_SIZE;
  /** Frees may wait for streams: the pool reports `freeCompleted` itself. */
  readonly defersFrees = true;
  readonly source: MemorySource;
  /** The knobs in force. */
  readonly settings: AllocatorSettings;
  /** The configuration string they came from. */
  readonly config: string;
  /** Total bytes behind the source; `Infinity` when not stated. */
  readonly totalMemory: number;
  /** Stream that {@link allocate} uses. @defaultValue 0 */
  stream: Stream = 0;

  private readonly blocks = new BlockStore();
  /** Address → slot of every allocated block. */
  private readonly live = new AddressTable();
  private readonly segments: (Segment | undefined)[] = [];
  private readonly spareSegmentIds: number[] = [];
  private readonly counters = new PoolCounters();
  private readonly main = new PoolOwner(0, null);
  private target: PoolOwner = this.main;
  private readonly privatePools = new Set<PoolOwner>();
  private nextPrivateId = 1;
  private readonly events: StreamEvents | null;
  /** Per stream, events recorded for pending frees, oldest first. */
  private readonly pending = new Map<Stream, PendingEvent[]>();
  private pendingCount = 0;
  /** Slot → streams (other than its own) that used the block. */
  private readonly streamUses = new Map<number, Stream[]>();
  private readonly sinks: StatsSink[] = [];
  private readonly callbacks: FreeMemoryCallback[] = [];
  /** Expandable segment per stream, for the small and the large pool. */
  private readonly expandableSmall = new Map<Stream, Segment>();
  private readonly expandableLarge = new Map<Stream, Segment>();
  private readonly maxSplitSize: number;
  private readonly maxNonSplitRounding: number;
  private readonly divisions: readonly number[];
  private readonly plainRounding: boolean;
  private readonly expandable: boolean;
  private allowedMemory: number = NO_CAP;
  private readonly decayMs: number | undefined;
  private readonly clock: () => number;
  /** Entirely free segments, in the order they became so (only with `decayMs`). */
  private readonly idle: Set<Segment> | null;
  private lastFailure: Failure | null = null;
  /** Whether free-block searches are counted (the clock of garbage-collection ages). */
  private readonly countSearches: boolean;
  /** The index {@link findFreeBlock} found its block in. */
  private foundIn: OrderedIndex | null = null;

  constructor(options: CachingPoolOptions) {
    if (typeof options?.source?.acquire !== 'function') {
      throw new InvalidArgumentError('source', options?.source, 'a MemorySource');
    }
    this.source = options.source;
    if (options.settings !== undefined) {
      this.settings = parseAllocConf(formatAllocConf(options.settings));
      this.config = formatAllocConf(this.settings);
    } else {
      this.config = options.config ?? allocConfFromEnv(options.env);
      this.settings = parseAllocConf(this.config);
    }
    this.totalMemory = options.totalMemory ?? NO_CAP;
    if (
      this.totalMemory !== NO_CAP &&
      !(Number.isSafeInteger(this.totalMemory) && this.totalMemory > 0)
    ) {
      throw new InvalidArgumentError(
        'totalMemory',
        this.totalMemory,
        'a positive safe integer of bytes',
      );
    }
    this.maxSplitSize = this.settings.maxSplitSize;
    this.maxNonSplitRounding = this.settings.maxNonSplitRounding;
    this.divisions = this.settings.roundupPower2Divisions;
    this.plainRounding = this.divisions.every((d) => d <= 1);
    this.expandable = this.settings.expandableSegments && typeof this.source.grow === 'function';
    this.countSearches = this.settings.garbageCollectionThreshold > 0;
    this.events = isStreamOrderedSource(this.source) ? this.source : null;
    const fraction = options.memoryFraction ?? this.settings.memoryFraction;
    if (fraction !== undefined) this.setMemoryFraction(fraction);
    if (options.decayMs !== undefined) {
      if (!(options.decayMs >= 0) || !Number.isFinite(options.decayMs)) {
        throw new InvalidArgumentError(
          'decayMs',
          options.decayMs,
          'a non-negative number of milliseconds',
        );
      }
    }
    this.decayMs = options.decayMs;
    this.clock = options.clock ?? (() => performance.now());
    this.idle = this.decayMs === undefined ? null : new Set();
  }

  // ── the Allocator contract ────────────────────────────────────────────────────────────────

  /**
   * A block of at least `size` bytes on the current {@link stream}, or `null` once the whole
   * out-of-memory path has failed.
   * @param alignment - bytes, a power of two; at least 512.
   */
  allocate(size: number, alignment?: number): number | null {
    return this.allocateOn(this.stream, size, alignment);
  }

  /** Like {@link allocate}, on `stream`. */
  allocateOn(stream: Stream, size: number, alignment?: number): number | null {
    const align = checkRequest(size, alignment, MIN_BLOCK_SIZE);
    if (stream !== 0) checkStream(stream);
    if (this.pendingCount > 0) this.processEvents();
    const rounded = this.plainRounding
      ? size <= MIN_BLOCK_SIZE
        ? MIN_BLOCK_SIZE
        : Math.ceil(size / MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE
      : roundSize(size, this.divisions);
    if (rounded > MAX_ROUNDED_SIZE) return null;
    const small = rounded <= SMALL_SIZE;
    const owner = this.target;
    const lists = small ? owner.small : owner.large;
    let slot = this.findFreeBlock(lists, stream, rounded, align);
    if (slot !== NIL) return this.useBlock(owner, lists, slot, size, rounded, align, this.foundIn);
    slot = this.allocateSlow(owner, lists, stream, size, rounded, align);
    if (slot === NIL) return null;
    return this.useBlock(owner, lists, slot, size, rounded, align, null);
  }

  /**
   * Like {@link allocate}, but failure throws `OutOfMemoryError` with PyTorch's message (requested,
   * total capacity, reserved, allocated, reserved but unallocated, the `expandable_segments` hint)
   * and a fragmentation diagnosis from `@allot/stats`.
   * @throws OutOfMemoryError when the out-of-memory path fails.
   */
  allocateOrThrow(size: number, alignment?: number): number {
    return this.allocateOnOrThrow(this.stream, size, alignment);
  }

  /** Like {@link allocateOrThrow}, on `stream`. */
  allocateOnOrThrow(stream: Stream, size: number, alignment?: number): number {
    this.lastFailure = null;
    const address = this.allocateOn(stream, size, alignment);
    if (address !== null) return address;
    throw this.outOfMemory(size, alignment);
  }

  free(address: number): void {
    const slot = this.live.delete(address);
    if (slot < 0) throw this.invalidFree(address);
    const b = this.blocks;
    const seg = this.segments[b.segment[slot]!]!;
    const size = b.size[slot]!;
    const oversize = size >= this.maxSplitSize;
    // Stream uses exist only after recordStream on a stream-ordered source.
    const uses = this.streamUses.size === 0 ? undefined : this.streamUses.get(slot);
    const pending = uses !== undefined;
    this.counters.freed(seg.small, size, oversize, pending);
    const own = seg.owner.counters;
    if (own !== null) own.freed(seg.small, size, oversize, pending);
    if (pending) {
      this.streamUses.delete(slot);
      b.state[slot] = BlockState.PendingFree;
      this.insertEvents(slot, uses);
      return;
    }
    this.freeBlock(slot, seg, false);
  }

  usableSize(address: number): number {
    const slot = this.live.get(address);
    if (slot < 0) {
      throw new InvalidArgumentError(
        'address',
        hex(address),
        'the start of a live block of this pool',
      );
    }
    return this.blocks.size[slot]!;
  }

  owns(address: number): boolean {
    return this.live.get(address) >= 0;
  }

  /**
   * capacity: bytes reserved from the source; allocatedBytes: usable sizes of live blocks;
   * freeBytes: cached free blocks; overheadBytes: blocks freed but waiting for streams.
   */
  usage(): Usage {
    return this.usageOf(null);
  }

  /** Gives every segment back to the source, live blocks included, and forgets every block. */
  reset(): void {
    for (const queue of this.pending.values()) {
      for (const p of queue) this.events?.destroyEvent?.(p.event);
    }
    this.pending.clear();
    this.pendingCount = 0;
    this.streamUses.clear();
    for (const seg of this.segments) {
      if (seg === undefined) continue;
      this.source.release(seg.region);
      for (const sink of this.sinks) sink.segmentFree(seg.address, seg.size, seg.stream);
    }
    this.segments.length = 0;
    this.spareSegmentIds.length = 0;
    this.blocks.clear();
    this.live.clear();
    this.expandableSmall.clear();
    this.expandableLarge.clear();
    this.idle?.clear();
    for (const owner of [this.main, ...this.privatePools]) {
      owner.small.clear();
      owner.large.clear();
      owner.segments.clear();
      owner.counters?.dropCurrent();
    }
    this.counters.dropCurrent();
  }

  /** Every segment (address order) with its blocks; pool `small`/`large` (`private-<id>/...`). */
  layout(): Layout {
    return this.layoutOf(null);
  }

  // ── a starting state ──────────────────────────────────────────────────────────────────────

  /**
   * Adds segments that were already held, with the blocks live in them (see {@link PoolStateSegment}):
   * each segment is acquired from the source at its size, its blocks are handed out as if allocated,
   * and the gaps between them are cached. The blocks are then freed like any other. Counters treat
   * the segments as `cudaMalloc` calls and the blocks as allocations.
   *
   * @returns the address of every block, per segment; `null` when the source (or the memory
   *   fraction) cannot supply every segment, and then nothing changed.
   * @throws InvalidArgumentError when the state is malformed; nothing changed.
   */
  restore(segments: readonly PoolStateSegment[]): number[][] | null {
    checkPoolState(segments);
    let total = 0;
    for (const segment of segments) total += segment.size;
    if (
      this.allowedMemory !== NO_CAP &&
      this.counters.current(Family.ReservedBytes) + total > this.allowedMemory
    ) {
      return null;
    }
    const regions: Region[] = [];
    for (const segment of segments) {
      const region = this.source.acquire(segment.size);
      if (region === null) {
        for (const acquired of regions) this.source.release(acquired);
        return null;
      }
      regions.push(region);
    }
    return segments.map((segment, i) => this.restoreSegment(segment, regions[i]!));
  }

  /** Registers `region` as `segment` and carves its live blocks (see {@link restore}). */
  private restoreSegment(segment: PoolStateSegment, region: Region): number[] {
    const small = segment.pool === 'small';
    const stream = segment.stream ?? 0;
    const expandable = this.expandable && segment.expandable === true;
    const byStream = small ? this.expandableSmall : this.expandableLarge;
    const seg = this.addSegment(
      region,
      this.main,
      small,
      stream,
      expandable && !byStream.has(stream),
    );
    if (seg.expandable) byStream.set(stream, seg);
    const lists = small ? this.main.small : this.main.large;
    const b = this.blocks;
    const addresses: number[] = [];
    let slot = seg.head; // the free, unindexed rest of the segment
    const { blocks } = segment;
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i]!;
      const address = region.address + block.offset;
      const limit = (i + 1 < blocks.length ? blocks[i + 1]!.offset : segment.size) - block.offset;
      let size = block.size ?? Math.min(limit, roundSize(block.requested, this.divisions));
      if (block.size === undefined && !this.splits(small, size, limit - size)) size = limit;
      if (address > b.address[slot]!) {
        // The gap before the block stays behind as a cached block.
        const gap = b.take();
        this.link(seg, gap, b.address[slot]!, address - b.address[slot]!, b.prev[slot]!, slot);
        b.address[slot] = address;
        b.size[slot]! -= b.size[gap]!;
        b.state[gap] = BlockState.Free;
        this.index(this.main, lists, stream, gap);
      }
      const rest = b.size[slot]! - size;
      let next = NIL;
      if (rest > 0) {
        next = b.take();
        this.link(seg, next, address + size, rest, slot, b.next[slot]!);
        b.size[slot] = size;
        b.state[next] = BlockState.Free;
      }
      this.handOut(this.main, small, slot, address, block.requested);
      addresses.push(address);
      slot = next;
      if (slot === NIL) break;
    }
    if (slot !== NIL) this.index(this.main, lists, stream, slot);
    return addresses;
  }

  /** Links a fresh block `slot` of `seg` covering `[address, address + size)` between two blocks. */
  private link(
    seg: Segment,
    slot: number,
    address: number,
    size: number,
    prev: number,
    next: number,
  ): void {
    const b = this.blocks;
    b.address[slot] = address;
    b.size[slot] = size;
    b.segment[slot] = seg.id;
    b.events[slot] = 0;
    b.prev[slot] = prev;
    b.next[slot] = next;
    if (prev === NIL) seg.head = slot;
    else b.next[prev] = slot;
    if (next === NIL) seg.tail = slot;
    else b.prev[next] = slot;
  }

  // ── streams ───────────────────────────────────────────────────────────────────────────────

  /**
   * Marks the live block at `address` as used by work queued on `stream`: after `free`, the block is
   * reused only once the source reports that work done (`torch.Tensor.record_stream`). On a source
   * without stream hooks streams are tags whose work is always done, so this only checks arguments.
   * @throws InvalidArgumentError when `address` is not a live block or `stream` is not a stream.
   */
  recordStream(address: number, stream: Stream): void {
    const slot = this.live.get(address);
    if (slot < 0) {
      throw new InvalidArgumentError(
        'address',
        hex(address),
        'the start of a live block of this pool',
      );
    }
    checkStream(stream);
    if (this.events === null) return;
    const seg = this.segments[this.blocks.segment[slot]!]!;
    if (stream === seg.stream) return;
    const uses = this.streamUses.get(slot);
    if (uses === undefined) this.streamUses.set(slot, [stream]);
    else if (!uses.includes(stream)) uses.push(stream);
  }

  /** Runs `body` with {@link stream} set to `stream`, then restores it. */
  withStream<T>(stream: Stream, body: () => T): T {
    checkStream(stream);
    const before = this.stream;
    this.stream = stream;
    try {
      return body();
    } finally {
      this.stream = before;
    }
  }

  /** Makes every pending free whose streams are done reusable now (done on each allocation too). */
  processEvents(): void {
    const events = this.events;
    if (events === null || this.pendingCount === 0) return;
    for (const queue of this.pending.values()) {
      let done = 0;
      while (done < queue.length && events.queryEvent(queue[done]!.event)) done++;
      if (done === 0) continue;
      const finished = queue.splice(0, done);
      for (const p of finished) this.eventDone(p);
    }
  }

  // ── memory management ─────────────────────────────────────────────────────────────────────

  /**
   * Gives every unused cached segment back to the source (`torch.cuda.empty_cache`): first waits for
   * pending frees where the source can wait (`synchronizeEvent`), then releases every segment whose
   * memory is all free, in the pool and in released private pools.
   */
  emptyCache(): void {
    this.releaseCachedBlocks();
  }

  /**
   * Gives back at least `bytes` of unused cached segments, and as little more as it can: the single
   * smallest unused segment that covers `bytes`, else unused segments from the largest down until
   * `bytes` are covered. Returns the bytes released (less than asked when not enough is unused).
   */
  release(bytes: number): number {
    if (!(Number.isSafeInteger(bytes) && bytes >= 0)) {
      throw new InvalidArgumentError('bytes', bytes, 'a non-negative safe integer');
    }
    if (bytes === 0) return 0;
    this.processEvents();
    const unused = this.unusedSegments((owner) => owner === this.main || owner.retired);
    let cover: Segment | undefined;
    for (const seg of unused) {
      if (seg.size >= bytes && (cover === undefined || seg.size < cover.size)) cover = seg;
    }
    if (cover !== undefined) {
      const size = cover.size;
      this.releaseSegment(cover);
      return size;
    }
    unused.sort((a, b) => b.size - a.size || a.address - b.address);
    let released = 0;
    for (const seg of unused) {
      if (released >= bytes) break;
      released += seg.size;
      this.releaseSegment(seg);
    }
    return released;
  }

  /**
   * Releases segments that have been entirely free for `decayMs` or longer, by the clock's reading
   * `now`. Returns the bytes released (0 without `decayMs`).
   */
  decay(now: number = this.clock()): number {
    const idle = this.idle;
    if (idle === null || idle.size === 0) return 0;
    const limit = now - this.decayMs!;
    let released = 0;
    for (const seg of idle) {
      if (seg.idleSince > limit) break;
      if (!this.isUnused(seg)) {
        idle.delete(seg);
        continue;
      }
      released += seg.size;
      this.releaseSegment(seg);
    }
    return released;
  }

  /**
   * Caps the bytes the pool may reserve at `fraction` × `totalMemory`
   * (`torch.cuda.set_per_process_memory_fraction`). Enables garbage collection.
   */
  setMemoryFraction(fraction: number): void {
    if (!(fraction > 0 && fraction <= 1)) {
      throw new InvalidArgumentError('memoryFraction', fraction, 'a number in (0, 1]');
    }
    if (this.totalMemory === NO_CAP) {
      throw new InvalidArgumentError('memoryFraction', fraction, 'a pool created with totalMemory');
    }
    this.allowedMemory = Math.floor(fraction * this.totalMemory);
  }

  /** Bytes the pool may reserve (`Infinity` without a memory fraction). */
  get allowedMemoryBytes(): number {
    return this.allowedMemory;
  }

  /** Registers a free-memory callback, run on cache misses; returns its removal. */
  onFreeMemory(callback: FreeMemoryCallback): () => void {
    this.callbacks.push(callback);
    return () => {
      const i = this.callbacks.indexOf(callback);
      if (i >= 0) this.callbacks.splice(i, 1);
    };
  }

  // ── private pools ─────────────────────────────────────────────────────────────────────────

  /** A new private pool (`torch.cuda.MemPool`): its own segments, blocks and statistics. */
  createPrivatePool(): PrivatePool {
    const owner = new PoolOwner(this.nextPrivateId++, new PoolCounters());
    this.privatePools.add(owner);
    return new PrivatePool(owner, {
      usage: () => this.usageOf(owner),
      layout: () => this.layoutOf(owner),
      poolStats: () => ({
        ...owner.counters!.report(this.maxSplitSize),
        allocatorSettings: this.allocatorSettings(),
      }),
      emptyCache: () => {
        this.processEvents();
        for (const seg of this.unusedSegments((o) => o === owner)) this.releaseSegment(seg);
      },
      release: () => {
        if (owner.retired) return;
        owner.retired = true;
        if (this.target === owner) this.target = this.main;
        this.processEvents();
        for (const seg of this.unusedSegments((o) => o === owner)) this.releaseSegment(seg);
        if (owner.segments.size === 0) this.privatePools.delete(owner);
      },
    });
  }

  /**
   * Routes allocations to `pool` (a new private pool when absent) until the scope is disposed:
   * `using scope = pool.usePrivatePool(); ...`. Frees always go back to the block's own pool.
   * Scopes nest; routing is the pool's state, so keep a scope to synchronous code.
   */
  usePrivatePool(pool: PrivatePool = this.createPrivatePool()): PrivatePoolScope {
    const owner = pool.owner;
    if (owner.retired || !this.privatePools.has(owner)) {
      throw new InvalidArgumentError(
        'pool',
        `private pool ${owner.id}`,
        'a live private pool of this caching pool',
      );
    }
    const previous = this.target;
    this.target = owner;
    let open = true;
    const close = () => {
      if (!open) return;
      open = false;
      this.target = previous.retired ? this.main : previous;
    };
    return { pool, close, [Symbol.dispose]: close };
  }

  /**
   * Runs `body` with allocations routed to a private pool (`torch.cuda.use_mem_pool`): a new one
   * passed to `body`, or `pool`.
   */
  withPrivatePool<T>(body: (pool: PrivatePool) => T): T;
  withPrivatePool<T>(pool: PrivatePool, body: (pool: PrivatePool) => T): T;
  withPrivatePool<T>(
    first: PrivatePool | ((pool: PrivatePool) => T),
    second?: (pool: PrivatePool) => T,
  ): T {
    const pool = typeof first === 'function' ? this.createPrivatePool() : first;
    const body = typeof first === 'function' ? first : second;
    if (typeof body !== 'function') {
      throw new InvalidArgumentError('body', body, 'a function to run inside the private pool');
    }
    const scope = this.usePrivatePool(pool);
    try {
      return body(pool);
    } finally {
      scope.close();
    }
  }

  // ── statistics ────────────────────────────────────────────────────────────────────────────

  /** PyTorch-keyed figures for `@allot/stats` (`withStats(pool)`, `memoryStats`, snapshots). */
  poolStats(): PoolStatsReport {
    return {
      ...this.counters.report(this.maxSplitSize),
      allocatorSettings: this.allocatorSettings(),
    };
  }

  /** `torch.cuda.memory_stats()`: every figure under PyTorch's key, sorted. */
  memoryStats(): MemoryStats {
    return flattenPoolStats(this.poolStats());
  }

  /** Sets every peak to its current value (`torch.cuda.reset_peak_memory_stats`). */
  resetPeakMemoryStats(): void {
    this.counters.resetPeak();
  }

  /** Zeroes cumulative figures (`torch.cuda.reset_accumulated_memory_stats`). */
  resetAccumulatedMemoryStats(): void {
    this.counters.resetAccumulated();
  }

  /** Connects a sink for segment and free-completed events; returns its disconnection. */
  attachStatsSink(sink: StatsSink): () => void {
    this.sinks.push(sink);
    return () => {
      const i = this.sinks.indexOf(sink);
      if (i >= 0) this.sinks.splice(i, 1);
    };
  }

  // ── internals: finding and using blocks ───────────────────────────────────────────────────

  /**
   * PyTorch's `get_free_block`: best fit in the stream's index, with the oversize rules. Returns the
   * block, left in its index (kept in {@link foundIn}) for {@link useBlock}, or NIL.
   */
  private findFreeBlock(lists: FreeLists, stream: Stream, rounded: number, align: number): number {
    if (this.countSearches) lists.searches++;
    const index = stream === 0 ? lists.stream0 : lists.byStream.get(stream);
    if (index == null) return NIL;
    let id = index.lowerBound(rounded, Number.NEGATIVE_INFINITY);
    if (id === NIL) return NIL;
    if (align > MIN_BLOCK_SIZE) {
      const b = this.blocks;
      while (id !== NIL) {
        const start = b.address[id]!;
        if (alignUp(start, align) + rounded <= start + b.size[id]!) break;
        id = index.successor(id);
      }
      if (id === NIL) return NIL;
    }
    if (this.expandable) id = this.preferMapped(index, id);
    const size = index.primary(id);
    const maxSplit = this.maxSplitSize;
    if (rounded < maxSplit) {
      if (size >= maxSplit) return NIL;
    } else if (size >= rounded + this.maxNonSplitRounding) {
      return NIL;
    }
    this.foundIn = index;
    return id;
  }

  /**
   * PyTorch's best fit among expandable blocks: a free block at the growing end of an expandable
   * segment counts as its size plus the address space it can still grow into, so the search moves on
   * from it to larger blocks that are "smaller" by that measure. The end stays free to grow, and a
   * fitting block elsewhere is used first (`get_free_block`, `expandable_size`).
   */
  private preferMapped(index: OrderedIndex, found: number): number {
    const b = this.blocks;
    const reach = (slot: number) => {
      const seg = this.segments[b.segment[slot]!]!;
      return seg.expandable && seg.tail === slot ? b.size[slot]! + UNMAPPED_REACH : b.size[slot]!;
    };
    let id = found;
    let next = index.successor(id);
    while (next !== NIL && this.segments[b.segment[id]!]!.expandable && reach(next) < reach(id)) {
      id = next;
      next = index.successor(id);
    }
    return id;
  }

  /** Whether a block of `rounded + remaining` bytes serving `rounded` has its remainder split off. */
  private splits(small: boolean, rounded: number, remaining: number): boolean {
    return small || this.expandable
      ? remaining >= MIN_BLOCK_SIZE
      : rounded < this.maxSplitSize && remaining > SMALL_SIZE;
  }

  /**
   * PyTorch's `alloc_found_block`: aligns, splits the remainder off, marks the block allocated.
   * `index` holds `slot` when it was found cached; null when `slot` is unindexed (a new segment).
   */
  private useBlock(
    owner: PoolOwner,
    lists: FreeLists,
    slot: number,
    size: number,
    rounded: number,
    align: number,
    index: OrderedIndex | null,
  ): number {
    const b = this.blocks;
    const seg = this.segments[b.segment[slot]!]!;
    if (this.idle !== null) this.idle.delete(seg);
    if (index !== null) {
      const address = b.address[slot]!;
      const total = b.size[slot]!;
      const remaining = total - rounded;
      if (
        this.splits(lists.small, rounded, remaining) &&
        (align <= MIN_BLOCK_SIZE || alignUp(address, align) === address)
      ) {
        // The remainder keeps the cached block's slot and index entry, rekeyed (in place when its
        // order among the cached blocks holds); the allocation takes a fresh slot in front of it.
        const used = b.take();
        const before = b.prev[slot]!;
        const wasSplit = (before !== NIL || b.next[slot] !== NIL) && !seg.expandable;
        b.address[used] = address;
        b.size[used] = rounded;
        b.segment[used] = seg.id;
        b.events[used] = 0;
        b.prev[used] = before;
        b.next[used] = slot;
        if (before === NIL) seg.head = used;
        else b.next[before] = used;
        b.prev[slot] = used;
        const rest = address + rounded;
        b.address[slot] = rest;
        b.size[slot] = remaining;
        b.gcBase[slot] = lists.searches;
        shrinkKey(index, slot, remaining, rest);
        this.recache(owner, lists.small, wasSplit, total, !seg.expandable, remaining);
        return this.handOut(owner, lists.small, used, address, size);
      }
      this.unindex(owner, lists.small, index, slot);
    }
    return this.useUnindexed(owner, lists, seg, slot, size, rounded, align);
  }

  /** {@link useBlock} for a block out of the index: alignment padding, the split, the hand-out. */
  private useUnindexed(
    owner: PoolOwner,
    lists: FreeLists,
    seg: Segment,
    slot: number,
    size: number,
    rounded: number,
    align: number,
  ): number {
    const b = this.blocks;
    let address = b.address[slot]!;
    if (align > MIN_BLOCK_SIZE) {
      const start = alignUp(address, align);
      if (start !== address) {
        // The padding before an aligned start stays behind as a free block of its own.
        const pad = b.take();
        b.address[pad] = address;
        b.size[pad] = start - address;
        b.segment[pad] = seg.id;
        b.events[pad] = 0;
        const before = b.prev[slot]!;
        b.prev[pad] = before;
        b.next[pad] = slot;
        if (before === NIL) seg.head = pad;
        else b.next[before] = pad;
        b.prev[slot] = pad;
        b.address[slot] = start;
        b.size[slot]! -= start - address;
        b.state[pad] = BlockState.Free;
        this.index(owner, lists, seg.stream, pad);
        address = start;
      }
    }
    const remaining = b.size[slot]! - rounded;
    if (this.splits(lists.small, rounded, remaining)) {
      const rest = b.take();
      const after = b.next[slot]!;
      b.address[rest] = address + rounded;
      b.size[rest] = remaining;
      b.segment[rest] = seg.id;
      b.events[rest] = 0;
      b.prev[rest] = slot;
      b.next[rest] = after;
      if (after === NIL) seg.tail = rest;
      else b.prev[after] = rest;
      b.next[slot] = rest;
      b.size[slot] = rounded;
      b.state[rest] = BlockState.Free;
      this.index(owner, lists, seg.stream, rest);
    }
    return this.handOut(owner, lists.small, slot, address, size);
  }

  /** Marks `slot` (at `address`) allocated for a request of `size` bytes and counts it. */
  private handOut(
    owner: PoolOwner,
    small: boolean,
    slot: number,
    address: number,
    size: number,
  ): number {
    const b = this.blocks;
    b.state[slot] = BlockState.Allocated;
    b.requested[slot] = size;
    this.live.set(address, slot);
    const usable = b.size[slot]!;
    const oversize = usable >= this.maxSplitSize;
    this.counters.allocated(small, usable, size, oversize);
    if (owner.counters !== null) owner.counters.allocated(small, usable, size, oversize);
    return address;
  }

  /** Adds a free block to its index, with the cached and inactive-split figures. */
  private index(owner: PoolOwner, lists: FreeLists, stream: Stream, slot: number): void {
    const b = this.blocks;
    const size = b.size[slot]!;
    b.gcBase[slot] = lists.searches;
    lists.index(stream).insert(slot, size, b.address[slot]!, size);
    this.recache(owner, lists.small, false, -1, this.isSplit(slot), size);
  }

  /** Removes a free block from its index, with the cached and inactive-split figures. */
  private unindex(owner: PoolOwner, small: boolean, index: OrderedIndex, slot: number): void {
    index.remove(slot);
    this.recache(owner, small, this.isSplit(slot), this.blocks.size[slot]!, false, -1);
  }

  /** Whether `slot` is part of a split segment (an expandable segment's blocks never count). */
  private isSplit(slot: number): boolean {
    const b = this.blocks;
    return (
      (b.prev[slot] !== NIL || b.next[slot] !== NIL) && !this.segments[b.segment[slot]!]!.expandable
    );
  }

  /**
   * Cached and inactive-split figures: a cached block of `removed` bytes leaves the cache and one of
   * `added` bytes enters it (each negative when none), for the pool and the block's owner.
   */
  private recache(
    owner: PoolOwner,
    small: boolean,
    removedSplit: boolean,
    removed: number,
    addedSplit: boolean,
    added: number,
  ): void {
    this.counters.recached(small, removedSplit, removed, addedSplit, added);
    if (owner.counters !== null)
      owner.counters.recached(small, removedSplit, removed, addedSplit, added);
  }

  /**
   * PyTorch's `free_block`: merges with free neighbours and caches the result (`pending`: the block
   * waited for streams since its free). A merged block keeps
   * a free neighbour's slot and index entry (the previous block's when it is free), rekeyed in place
   * when its order among the cached blocks holds.
   */
  private freeBlock(slot: number, seg: Segment, pending: boolean): void {
    const b = this.blocks;
    const owner = seg.owner;
    const small = seg.small;
    const lists = small ? owner.small : owner.large;
    const address = b.address[slot]!;
    const size = b.size[slot]!;
    const requested = b.requested[slot]!;
    b.state[slot] = BlockState.Free;
    const prev = b.prev[slot]!;
    const next = b.next[slot]!;
    const prevFree = prev !== NIL && b.state[prev] === BlockState.Free;
    const nextFree = next !== NIL && b.state[next] === BlockState.Free;
    let cached = slot;
    if (!prevFree && !nextFree) {
      this.index(owner, lists, seg.stream, slot);
    } else {
      const index = lists.find(seg.stream)!;
      // A cached neighbour of a block is always part of a split segment.
      const wasSplit = !seg.expandable;
      if (prevFree) {
        cached = prev;
        const before = b.size[prev]!;
        let merged = before + size;
        let after = next;
        if (nextFree) {
          this.unindex(owner, small, index, next);
          merged += b.size[next]!;
          after = b.next[next]!;
          b.recycle(next);
        }
        b.size[prev] = merged;
        b.next[prev] = after;
        if (after === NIL) seg.tail = prev;
        else b.prev[after] = prev;
        b.recycle(slot);
        b.gcBase[prev] = lists.searches;
        growKey(index, prev, merged, b.address[prev]!);
        const split = (b.prev[prev] !== NIL || after !== NIL) && !seg.expandable;
        this.recache(owner, small, wasSplit, before, split, merged);
      } else {
        cached = next;
        const before = b.size[next]!;
        const merged = before + size;
        b.address[next] = address;
        b.size[next] = merged;
        b.prev[next] = prev;
        if (prev === NIL) seg.head = next;
        else b.next[prev] = next;
        b.recycle(slot);
        b.gcBase[next] = lists.searches;
        growKey(index, next, merged, address);
        const split = (prev !== NIL || b.next[next] !== NIL) && !seg.expandable;
        this.recache(owner, small, wasSplit, before, split, merged);
      }
    }
    this.counters.deactivated(small, size, requested, pending);
    if (owner.counters !== null) owner.counters.deactivated(small, size, requested, pending);
    if (this.sinks.length !== 0) {
      for (const sink of this.sinks) sink.freeCompleted(address, size, seg.stream);
    }
    if (b.prev[cached] === NIL && b.next[cached] === NIL) this.becameUnused(seg);
  }

  /** A segment's memory is all free again: released pools give it back, decay notes the time. */
  private becameUnused(seg: Segment): void {
    if (seg.owner.retired) {
      this.releaseSegment(seg);
      if (seg.owner.segments.size === 0) this.privatePools.delete(seg.owner);
      return;
    }
    const idle = this.idle;
    if (idle === null) return;
    const now = this.clock();
    seg.idleSince = now;
    idle.delete(seg);
    idle.add(seg);
    const first = idle.values().next().value;
    if (first !== undefined && first.idleSince <= now - this.decayMs!) this.decay(now);
  }

  // ── internals: the out-of-memory path ─────────────────────────────────────────────────────

  /** PyTorch's `malloc` after a miss, in its order. Returns a free, unindexed block or NIL. */
  private allocateSlow(
    owner: PoolOwner,
    lists: FreeLists,
    stream: Stream,
    size: number,
    rounded: number,
    align: number,
  ): number {
    if (this.idle !== null && this.idle.size > 0) this.decay();
    let slot = NIL;
    if (this.callbacks.length > 0 && this.runCallbacks(rounded, stream)) {
      slot = this.findFreeBlock(lists, stream, rounded, align);
    }
    if (slot !== NIL) {
      this.unindex(owner, lists.small, this.foundIn!, slot);
      return slot;
    }
    if (this.settings.garbageCollectionThreshold > 0 && this.allowedMemory !== NO_CAP) {
      this.collectGarbage();
    }
    slot = this.allocateSegment(owner, lists, stream, rounded, align, false);
    if (slot === NIL && this.releaseOversize(lists, stream, rounded)) {
      slot = this.allocateSegment(owner, lists, stream, rounded, align, false);
    }
    if (slot === NIL && this.releaseCachedBlocks()) {
      slot = this.allocateSegment(owner, lists, stream, rounded, align, true);
    }
    if (slot === NIL) {
      this.counters.numOoms++;
      if (owner.counters !== null) owner.counters.numOoms++;
      this.lastFailure = {
        size,
        alignment: align,
        allocationSize: allocationSize(
          align > MIN_BLOCK_SIZE ? rounded + align - MIN_BLOCK_SIZE : rounded,
        ),
      };
    }
    return slot;
  }

  private runCallbacks(size: number, stream: Stream): boolean {
    let freed = false;
    for (const callback of [...this.callbacks]) {
      if (callback({ size, stream })) freed = true;
    }
    return freed;
  }

  /**
   * PyTorch's `garbage_collect_cached_blocks`: above `threshold × allowed`, releases unsplit cached
   * large blocks of the pool, oldest first by the average age of the rest, until enough is freed.
   */
  private collectGarbage(): void {
    const threshold = Math.floor(this.settings.garbageCollectionThreshold * this.allowedMemory);
    const reserved = this.counters.current(Family.ReservedBytes);
    if (reserved <= threshold) return;
    const target = reserved - threshold;
    const lists = this.main.large;
    const b = this.blocks;
    const age = (slot: number) => lists.searches - b.gcBase[slot]!;
    const candidates: number[] = [];
    for (const index of lists.ordered()) {
      for (let id = index.first(); id !== NIL; id = index.successor(id)) {
        if (
          b.prev[id] === NIL &&
          b.next[id] === NIL &&
          !this.segments[b.segment[id]!]!.expandable
        ) {
          candidates.push(id);
        }
      }
    }
    if (candidates.length === 0) return;
    let totalAge = 0;
    for (const id of candidates) totalAge += age(id);
    let count = candidates.length;
    let reclaimed = 0;
    let freedOne = true;
    const alive = new Set(candidates);
    while (reclaimed < target && freedOne && count > 0) {
      const threshold = totalAge / count;
      freedOne = false;
      for (const id of candidates) {
        if (!alive.has(id)) continue;
        const a = age(id);
        if (a >= threshold) {
          freedOne = true;
          reclaimed += b.size[id]!;
          totalAge -= a;
          count--;
          alive.delete(id);
          this.releaseSegment(this.segments[b.segment[id]!]!);
        }
      }
    }
  }

  /** PyTorch's `alloc_block`: a new segment (or growth of an expandable one); its block, unindexed. */
  private allocateSegment(
    owner: PoolOwner,
    lists: FreeLists,
    stream: Stream,
    rounded: number,
    align: number,
    isRetry: boolean,
  ): number {
    if (isRetry) {
      this.counters.numAllocRetries++;
      if (owner.counters !== null) owner.counters.numAllocRetries++;
    }
    const padding = align > MIN_BLOCK_SIZE ? align - MIN_BLOCK_SIZE : 0;
    const size = allocationSize(rounded + padding);
    if (
      this.allowedMemory !== NO_CAP &&
      this.counters.current(Family.ReservedBytes) + size > this.allowedMemory
    ) {
      return NIL;
    }
    if (this.expandable && owner === this.main) {
      return this.growExpandable(lists.small, stream, rounded, align, padding);
    }
    const region = this.source.acquire(size);
    if (region === null) return NIL;
    return this.addSegment(region, owner, lists.small, stream, false).head;
  }

  /** Grows the expandable segment of (pool, stream) in place, or starts a new one. */
  private growExpandable(
    small: boolean,
    stream: Stream,
    rounded: number,
    align: number,
    padding: number,
  ): number {
    const page = small ? SMALL_BUFFER : LARGE_BUFFER;
    const byStream = small ? this.expandableSmall : this.expandableLarge;
    const seg = byStream.get(stream);
    const b = this.blocks;
    if (seg !== undefined) {
      const end = seg.address + seg.size;
      const tail = seg.tail;
      const tailFree = b.state[tail] === BlockState.Free;
      const start = alignUp(tailFree ? b.address[tail]! : end, align);
      const need = Math.max(0, start + rounded - end);
      const grown = need === 0 || this.source.grow!(seg.region, seg.size + alignUp(need, page));
      if (grown) {
        const added = seg.region.size - seg.size;
        if (added > 0) this.countGrowth(seg, end, added);
        if (tailFree) {
          this.unindex(seg.owner, small, this.main[small ? 'small' : 'large'].find(stream)!, tail);
          b.size[tail]! += added;
          return tail;
        }
        const slot = b.take();
        b.address[slot] = end;
        b.size[slot] = added;
        b.segment[slot] = seg.id;
        b.events[slot] = 0;
        b.prev[slot] = tail;
        b.next[slot] = NIL;
        b.next[tail] = slot;
        b.state[slot] = BlockState.Free;
        seg.tail = slot;
        return slot;
      }
    }
    const region = this.source.acquire(alignUp(rounded + padding, page));
    if (region === null) return NIL;
    const fresh = this.addSegment(region, this.main, small, stream, true);
    byStream.set(stream, fresh);
    return fresh.head;
  }

  private countGrowth(seg: Segment, at: number, added: number): void {
    seg.size += added;
    this.counters.increase(Family.ReservedBytes, seg.small, added);
    for (const sink of this.sinks) sink.segmentAlloc(at, added, seg.stream);
  }

  /** Registers a region as a segment holding one free, unindexed block. */
  private addSegment(
    region: Region,
    owner: PoolOwner,
    small: boolean,
    stream: Stream,
    expandable: boolean,
  ): Segment {
    const id = this.spareSegmentIds.pop() ?? this.segments.length;
    const b = this.blocks;
    const slot = b.take();
    const seg: Segment = {
      id,
      region,
      address: region.address,
      size: region.size,
      owner,
      small,
      stream,
      expandable,
      head: slot,
      tail: slot,
      idleSince: 0,
    };
    this.segments[id] = seg;
    owner.segments.add(seg);
    b.address[slot] = region.address;
    b.size[slot] = region.size;
    b.segment[slot] = id;
    b.events[slot] = 0;
    b.prev[slot] = NIL;
    b.next[slot] = NIL;
    b.state[slot] = BlockState.Free;
    for (const c of owner.counters === null ? [this.counters] : [this.counters, owner.counters]) {
      c.increase(Family.Segment, small, 1);
      c.increase(Family.ReservedBytes, small, region.size);
      if (region.size >= this.maxSplitSize) c.increase(Family.OversizeSegments, small, 1);
      c.numDeviceAlloc++;
    }
    for (const sink of this.sinks) sink.segmentAlloc(region.address, region.size, stream);
    return seg;
  }

  /** Gives an entirely free segment back to the source. */
  private releaseSegment(seg: Segment): void {
    const b = this.blocks;
    const slot = seg.head;
    const owner = seg.owner;
    const lists = seg.small ? owner.small : owner.large;
    const index = lists.find(seg.stream);
    if (index?.has(slot)) this.unindex(owner, seg.small, index, slot);
    b.recycle(slot);
    for (const c of owner.counters === null ? [this.counters] : [this.counters, owner.counters]) {
      c.decrease(Family.Segment, seg.small, 1);
      c.decrease(Family.ReservedBytes, seg.small, seg.size);
      if (seg.size >= this.maxSplitSize) c.decrease(Family.OversizeSegments, seg.small, 1);
      c.numDeviceFree++;
    }
    this.segments[seg.id] = undefined;
    this.spareSegmentIds.push(seg.id);
    owner.segments.delete(seg);
    this.idle?.delete(seg);
    if (seg.expandable) {
      const byStream = seg.small ? this.expandableSmall : this.expandableLarge;
      if (byStream.get(seg.stream) === seg) byStream.delete(seg.stream);
    }
    this.source.release(seg.region);
    for (const sink of this.sinks) sink.segmentFree(seg.address, seg.size, seg.stream);
  }

  /**
   * PyTorch's `release_available_cached_blocks`: with a `max_split_size`, releases the smallest
   * oversize cached block that covers the request, else oversize blocks from the largest down.
   */
  private releaseOversize(lists: FreeLists, stream: Stream, rounded: number): boolean {
    const maxSplit = this.maxSplitSize;
    if (maxSplit === NO_CAP) return false;
    const index = lists.find(stream);
    if (index === undefined) return false;
    const b = this.blocks;
    const key = Math.max(rounded, maxSplit);
    const whole = (id: number) =>
      b.prev[id] === NIL && b.next[id] === NIL && !this.segments[b.segment[id]!]!.expandable;
    const found = index.lowerBound(key, Number.NEGATIVE_INFINITY);
    if (found !== NIL && whole(found)) {
      this.releaseSegment(this.segments[b.segment[found]!]!);
      return true;
    }
    let id = found === NIL ? index.last() : index.predecessor(found);
    let released = 0;
    while (id !== NIL && released < key && index.primary(id) >= maxSplit) {
      const current = id;
      id = index.predecessor(current);
      if (whole(current)) {
        released += b.size[current]!;
        this.releaseSegment(this.segments[b.segment[current]!]!);
      }
    }
    return released >= key;
  }

  /** PyTorch's `release_cached_blocks`: waits for pending frees, releases every unused segment. */
  private releaseCachedBlocks(): boolean {
    this.synchronizeEvents();
    for (const seg of this.unusedSegments((owner) => owner === this.main || owner.retired)) {
      this.releaseSegment(seg);
    }
    for (const owner of [...this.privatePools]) {
      if (owner.retired && owner.segments.size === 0) this.privatePools.delete(owner);
    }
    return true;
  }

  /** Segments entirely free, of the owners `which` accepts: large pool first, as PyTorch. */
  private unusedSegments(which: (owner: PoolOwner) => boolean): Segment[] {
    const out: Segment[] = [];
    for (const seg of this.segments) {
      if (seg !== undefined && which(seg.owner) && this.isUnused(seg)) out.push(seg);
    }
    return out.sort((x, y) => Number(x.small) - Number(y.small) || x.address - y.address);
  }

  private isUnused(seg: Segment): boolean {
    const b = this.blocks;
    const h = seg.head;
    return b.next[h] === NIL && b.state[h] === BlockState.Free;
  }

  // ── internals: stream events ──────────────────────────────────────────────────────────────

  private insertEvents(slot: number, uses: readonly Stream[]): void {
    const events = this.events!;
    const b = this.blocks;
    for (const stream of uses) {
      const event = events.recordEvent(stream);
      b.events[slot]! += 1;
      let queue = this.pending.get(stream);
      if (queue === undefined) {
        queue = [];
        this.pending.set(stream, queue);
      }
      queue.push({ event, slot });
      this.pendingCount++;
    }
  }

  private eventDone(p: PendingEvent): void {
    this.events?.destroyEvent?.(p.event);
    this.pendingCount--;
    const b = this.blocks;
    b.events[p.slot]! -= 1;
    if (b.events[p.slot] === 0) this.freeBlock(p.slot, this.segments[b.segment[p.slot]!]!, true);
  }

  /** PyTorch's `synchronize_and_free_events`: waits where the source can, then completes. */
  private synchronizeEvents(): void {
    const events = this.events;
    if (events === null || this.pendingCount === 0) return;
    if (typeof events.synchronizeEvent !== 'function') {
      this.processEvents();
      return;
    }
    this.counters.numSyncAllStreams++;
    for (const queue of this.pending.values()) {
      const all = queue.splice(0, queue.length);
      for (const p of all) {
        events.synchronizeEvent(p.event);
        this.eventDone(p);
      }
    }
  }

  // ── internals: reports ────────────────────────────────────────────────────────────────────

  private usageOf(only: PoolOwner | null): Usage {
    const c = only === null ? this.counters : only.counters!;
    const capacity = c.current(Family.ReservedBytes);
    const allocatedBytes = c.current(Family.AllocatedBytes);
    const active = c.current(Family.ActiveBytes);
    let largestFreeBlock = 0;
    for (const owner of only === null ? [this.main, ...this.privatePools] : [only]) {
      for (const lists of [owner.small, owner.large]) {
        for (const index of lists.byStream.values()) {
          const last = index.last();
          if (last !== NIL && index.primary(last) > largestFreeBlock)
            largestFreeBlock = index.primary(last);
        }
      }
    }
    return {
      capacity,
      allocatedBytes,
      freeBytes: capacity - active,
      overheadBytes: active - allocatedBytes,
      largestFreeBlock,
      liveCount: c.current(Family.Allocation),
      freeBlockCount: c.cachedBlocks,
    };
  }

  private layoutOf(only: PoolOwner | null): Layout {
    const b = this.blocks;
    const segments: PoolLayoutSegment[] = [];
    const all = this.segments.filter(
      (s): s is Segment => s !== undefined && (only === null || s.owner === only),
    );
    all.sort((x, y) => x.address - y.address);
    for (const seg of all) {
      const blocks: PoolLayoutBlock[] = [];
      for (let s = seg.head; s !== NIL; s = b.next[s]!) {
        const state = b.state[s];
        const block: PoolLayoutBlock =
          state === BlockState.Free
            ? { address: b.address[s]!, size: b.size[s]!, free: true }
            : {
                address: b.address[s]!,
                size: b.size[s]!,
                free: false,
                requestedSize: b.requested[s]!,
                ...(state === BlockState.PendingFree ? { pendingFree: true } : {}),
              };
        blocks.push(block);
      }
      segments.push({
        address: seg.address,
        size: seg.size,
        pool: seg.owner.poolName(seg.small),
        stream: seg.stream,
        expandable: seg.expandable,
        blocks,
      });
    }
    return { segments };
  }

  private allocatorSettings(): PoolStatsReport['allocatorSettings'] {
    const s = this.settings;
    const divisions: Record<string, number> = {};
    s.roundupPower2Divisions.forEach((d, i) => {
      divisions[String(2 ** i)] = d;
    });
    return {
      PYTORCH_CUDA_ALLOC_CONF: this.config,
      max_split_size: s.maxSplitSize === NO_CAP ? -1 : s.maxSplitSize,
      garbage_collection_threshold: pickleFloat(s.garbageCollectionThreshold),
      expandable_segments: this.expandable,
      pinned_num_register_threads: 1,
      release_lock_on_cudamalloc: false,
      pinned_use_cuda_host_register: false,
      roundup_power2_divisions: divisions,
    };
  }

  private outOfMemory(size: number, alignment: number | undefined): OutOfMemoryError {
    const align = Math.max(alignment ?? MIN_BLOCK_SIZE, MIN_BLOCK_SIZE);
    const failure = this.lastFailure ?? {
      size,
      alignment: align,
      allocationSize: allocationSize(roundSize(size, this.divisions)),
    };
    const usage = this.usage();
    let privateAllocated = 0;
    for (const owner of this.privatePools)
      privateAllocated += owner.counters!.current(Family.AllocatedBytes);
    const message = outOfMemoryMessage({
      sourceKind: this.source.kind,
      allocationSize: failure.allocationSize,
      totalMemory: this.totalMemory,
      allowedMemory: this.allowedMemory,
      reservedBytes: usage.capacity,
      allocatedBytes: usage.allocatedBytes - privateAllocated,
      privateAllocatedBytes: privateAllocated,
    });
    const diagnosis = diagnose(this, size, align);
    return new OutOfMemoryError({
      requested: size,
      alignment: align,
      capacity:
        this.totalMemory === NO_CAP
          ? usage.capacity
          : Math.min(this.totalMemory, this.allowedMemory),
      freeBytes: usage.freeBytes,
      largestFreeBlock: usage.largestFreeBlock,
      reason: diagnosis.reason,
      detail: `${message}\n${diagnosis.summary}`,
      diagnosis,
    });
  }

  private invalidFree(address: number): InvalidFreeError {
    if (typeof address !== 'number' || !Number.isFinite(address)) {
      return new InvalidFreeError(address, 'foreign-address');
    }
    const b = this.blocks;
    for (const seg of this.segments) {
      if (seg === undefined || address < seg.address || address >= seg.address + seg.size) continue;
      for (let s = seg.head; s !== NIL; s = b.next[s]!) {
        const start = b.address[s]!;
        if (address < start || address >= start + b.size[s]!) continue;
        if (address === start) return new InvalidFreeError(address, 'double-free');
        return new InvalidFreeError(
          address,
          b.state[s] === BlockState.Allocated ? 'interior-pointer' : 'not-live',
        );
      }
    }
    return new InvalidFreeError(address, 'foreign-address');
  }
}

/** What a {@link PrivatePool} asks of the caching pool that made it. */
interface PrivatePoolHost {
  usage(): Usage;
  layout(): Layout;
  poolStats(): PoolStatsReport;
  emptyCache(): void;
  release(): void;
}

/**
 * A private pool (`torch.cuda.MemPool`): segments of its own inside a caching pool, filled by the
 * allocations made inside {@link CachingPool.usePrivatePool} or {@link CachingPool.withPrivatePool},
 * with statistics of its own. Blocks are freed through the caching pool as usual.
 */
export class PrivatePool {
  /** @internal */
  constructor(
    /** @internal */ readonly owner: PoolOwner,
    private readonly host: PrivatePoolHost,
  ) {}

  /** 1, 2, ... in creation order. */
  get id(): number {
    return this.owner.id;
  }

  /** Whether {@link release} was called. */
  get released(): boolean {
    return this.owner.retired;
  }

  /** Figures of this pool's segments alone. */
  usage(): Usage {
    return this.host.usage();
  }

  /** This pool's segments and blocks. */
  layout(): Layout {
    return this.host.layout();
  }

  /** This pool's statistics, PyTorch-keyed. */
  poolStats(): PoolStatsReport {
    return this.host.poolStats();
  }

  /** `memory_stats()` of this pool alone. */
  memoryStats(): MemoryStats {
    return flattenPoolStats(this.host.poolStats());
  }

  /** Gives this pool's unused segments back to the source. */
  emptyCache(): void {
    this.host.emptyCache();
  }

  /**
   * Ends the pool: no scope may route to it any more, unused segments go back to the source now
   * and the others as soon as their blocks are all freed.
   */
  release(): void {
    this.host.release();
  }

  [Symbol.dispose](): void {
    this.release();
  }
}
