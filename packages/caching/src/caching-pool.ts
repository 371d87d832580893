/**
 * cachingPool: a growing pool over a memory source with the policy of PyTorch's CUDA caching
 * allocator (`c10/cuda/CUDACachingAllocator.cpp`), written from its documented behaviour.
 *
 * This file is the public face and the outline of the allocation path; each concern lives in a
 * module of its own, named after it:
 *
 * ```
 *  allocate(size) ─► size-policy: round (512 B, or power-of-two divisions), pool small | large
 *        │
 *        ▼  block-lifecycle: best fit in the (owner, pool, stream) index ─► split ─► hand out
 *        │  (cached-index: the indices and their figures; block-store: the blocks of a segment)
 *        ▼  miss: PyTorch's out-of-memory path, below ({@link allocateSlow})
 *  callbacks ─► release: garbage collection ─► segments / expandable-segments: a new segment or
 *  growth ─► release oversize cached blocks, retry ─► release every unused segment, retry ─► null
 *
 *  free(address) ─► pending-frees: wait for recorded streams ─► block-lifecycle: merge with free
 *  neighbours, cache ─► decay: an unused segment is timed (or given back by a released private pool)
 * ```
 *
 * Also: `private-pools` (`torch.cuda.MemPool`), `restore` (a starting state), `pool-report` (the
 * read-only views `@allot/stats` consumes: usage, layout, PyTorch-keyed figures, errors), and
 * `pool-core` (the state all of them share, passed to plain functions: no dispatch on the hot path).
 *
 * Beyond PyTorch: `release(bytes)` frees only as much as asked, preferring the single smallest
 * segment that covers it; segments unused for `decayMs` go back to the source (jemalloc's decay).
 */
import {
  type Allocator,
  checkRequest,
  InvalidArgumentError,
  type Layout,
  type MemorySource,
  type Usage,
} from '@allot/core';
import type { MemoryStats, PoolStatsReport, PoolStatsSource, StatsSink } from '@allot/stats';
import type { AllocatorSettings } from './alloc-conf';
import { findFreeBlock, freeBlock, useBlock } from './block-lifecycle';
import { BlockState, NIL } from './block-store';
import { unindexBlock } from './cached-index';
import { MAX_ROUNDED_SIZE, MIN_BLOCK_SIZE } from './constants';
import { decay } from './decay';
import { growExpandable } from './expandable-segments';
import { coolHot, park, reparkHot, retakeHot, settleParked, takeParked } from './parked-free';
import {
  checkStream,
  dropPendingFrees,
  insertEvents,
  processEvents,
  recordStreamUse,
} from './pending-frees';
import { type CachingPoolOptions, type FreeMemoryCallback, NO_CAP, PoolCore } from './pool-core';
import { Family } from './pool-counters';
import type { FreeLists, PoolOwner } from './pool-owner';
import {
  freeSpaceOf,
  invalidFree,
  layoutOf,
  memoryStatsOf,
  outOfMemoryError,
  poolStatsOf,
  usageOf,
} from './pool-report';
import type { PoolStateSegment } from './pool-state';
import {
  createPrivatePool,
  type PrivatePool,
  type PrivatePoolScope,
  usePrivatePool,
} from './private-pools';
import { collectGarbage, releaseBytes, releaseCachedBlocks, releaseOversize } from './release';
import { restore } from './restore';
import { addSegment } from './segments';
import { allocationSize, isSmallSize, paddedSize, roundPlain, roundSize } from './size-policy';
import type { Stream } from './stream-source';

export type { CachingPoolOptions, FreeMemoryCallback } from './pool-core';
export { PrivatePool, type PrivatePoolScope } from './private-pools';

/**
 * The slot of the live block at `address`, or a negative number. The parked block of the hot cycle
 * keeps its address-table entry (parked-free.ts), but it is not live.
 */
function liveSlot(p: PoolCore, address: number): number {
  const slot = p.live.get(address);
  return slot === p.parked ? NIL : slot;
}

function hex(address: number): string {
  return Number.isFinite(address) ? `0x${address.toString(16)}` : String(address);
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

  /** Everything the pool knows; the modules of this package work on it. */
  private readonly core: PoolCore;

  constructor(options: CachingPoolOptions) {
    const core = new PoolCore(options);
    this.core = core;
    this.source = core.source;
    this.settings = core.settings;
    this.config = core.config;
    this.totalMemory = core.totalMemory;
  }

  // ── the allocation path ───────────────────────────────────────────────────────────────────

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
    const p = this.core;
    const hot = p.hot;
    if (hot !== NIL) {
      // The request that took the hot block back, again: the hot cycle (parked-free.ts).
      const b = p.blocks;
      if (hot === p.parked && size === b.requested[hot] && alignment === undefined) {
        const seg = p.segments[b.segment[hot]!]!;
        if (seg.stream === stream && seg.owner === p.target) return retakeHot(p, seg);
      }
      coolHot(p);
    }
    const align = checkRequest(size, alignment, MIN_BLOCK_SIZE);
    if (stream !== 0) checkStream(stream);
    if (p.pendingCount > 0) {
      settleParked(p);
      processEvents(p);
    }
    const rounded = p.plainRounding ? roundPlain(size) : roundSize(size, p.divisions);
    if (rounded > MAX_ROUNDED_SIZE) return null;
    const owner = p.target;
    const lists = isSmallSize(rounded) ? owner.small : owner.large;
    if (p.parked !== NIL) {
      // The block freed last, taken back without its merge and split (parked-free.ts).
      const address = takeParked(p, owner, lists, stream, size, rounded, align);
      if (address !== -1) return address;
      settleParked(p);
    }
    // A hit: the smallest cached block of the (owner, pool, stream) that fits.
    let slot = findFreeBlock(p, lists, stream, rounded, align);
    if (slot !== NIL) return useBlock(p, owner, lists, slot, size, rounded, align, p.foundIn);
    // A miss: PyTorch's out-of-memory path yields an unindexed block of a new or grown segment.
    slot = allocateSlow(p, owner, lists, stream, size, rounded, align);
    if (slot === NIL) return null;
    return useBlock(p, owner, lists, slot, size, rounded, align, null);
  }

  /**
   * Like {@link allocate}, but failure throws `OutOfMemoryError` with PyTorch's message (requested,
   * total capacity, reserved, allocated, reserved but unallocated, the `expandable_segments` hint)
   * and a fragmentation diagnosis.
   * @throws OutOfMemoryError when the out-of-memory path fails.
   */
  allocateOrThrow(size: number, alignment?: number): number {
    return this.allocateOnOrThrow(this.stream, size, alignment);
  }

  /** Like {@link allocateOrThrow}, on `stream`. */
  allocateOnOrThrow(stream: Stream, size: number, alignment?: number): number {
    this.core.lastFailure = null;
    const address = this.allocateOn(stream, size, alignment);
    if (address !== null) return address;
    throw outOfMemoryError(this.core, size, alignment);
  }

  free(address: number): void {
    const p = this.core;
    const hot = p.hot;
    if (hot !== NIL && hot !== p.parked && p.blocks.address[hot] === address) {
      // The block the last call took back, with no stream use recorded: the hot cycle.
      if (p.streamUses.size === 0) {
        reparkHot(p);
        return;
      }
    }
    settleParked(p);
    const slot = p.live.take(address);
    if (slot < 0) throw invalidFree(p, address);
    const b = p.blocks;
    const seg = p.segments[b.segment[slot]!]!;
    const size = b.size[slot]!;
    const oversize = size >= p.maxSplitSize;
    // Stream uses exist only after recordStream on a stream-ordered source.
    const uses = p.streamUses.size === 0 ? undefined : p.streamUses.get(slot);
    const pending = uses !== undefined;
    p.counters.freed(seg.small, size, oversize, pending);
    const own = seg.owner.counters;
    if (own !== null) own.freed(seg.small, size, oversize, pending);
    if (pending) {
      // Reusable once the streams' work is done (pending-frees).
      p.streamUses.delete(slot);
      b.state[slot] = BlockState.PendingFree;
      insertEvents(p, slot, uses);
      return;
    }
    // Merged into the cached block after it at the next call, unless that call takes it back.
    if (!park(p, slot, seg)) freeBlock(p, slot, seg, false);
  }

  // ── the rest of the Allocator contract ────────────────────────────────────────────────────

  usableSize(address: number): number {
    const p = this.core;
    const slot = liveSlot(p, address);
    if (slot < 0) {
      throw new InvalidArgumentError(
        'address',
        hex(address),
        'the start of a live block of this pool',
      );
    }
    return p.blocks.size[slot]!;
  }

  owns(address: number): boolean {
    return liveSlot(this.core, address) >= 0;
  }

  /**
   * capacity: bytes reserved from the source; allocatedBytes: usable sizes of live blocks;
   * freeBytes: cached free blocks; overheadBytes: blocks freed but waiting for streams.
   */
  usage(): Usage {
    settleParked(this.core);
    return usageOf(this.core, null);
  }

  /** Every segment (address order) with its blocks; pool `small`/`large` (`private-<id>/...`). */
  layout(): Layout {
    settleParked(this.core);
    return layoutOf(this.core, null);
  }

  /**
   * The free bytes and the largest free block of {@link layout}, without building it (a replay's
   * fragmentation at every sample).
   */
  freeSpace(): { freeBytes: number; largestFreeBlock: number } {
    settleParked(this.core);
    return freeSpaceOf(this.core);
  }

  /** Gives every segment back to the source, live blocks included, and forgets every block. */
  reset(): void {
    const p = this.core;
    settleParked(p);
    dropPendingFrees(p);
    for (const seg of p.segments) {
      if (seg === undefined) continue;
      p.source.release(seg.region);
      for (const sink of p.sinks) sink.segmentFree(seg.address, seg.size, seg.stream);
    }
    p.segments.length = 0;
    p.spareSegmentIds.length = 0;
    p.blocks.clear();
    p.live.clear();
    p.expandableSmall.clear();
    p.expandableLarge.clear();
    p.idle?.clear();
    for (const owner of p.owners()) {
      owner.small.clear();
      owner.large.clear();
      owner.segments.clear();
      owner.counters?.dropCurrent();
    }
    p.counters.dropCurrent();
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
    settleParked(this.core);
    return restore(this.core, segments);
  }

  // ── streams ───────────────────────────────────────────────────────────────────────────────

  /**
   * Marks the live block at `address` as used by work queued on `stream`: after `free`, the block is
   * reused only once the source reports that work done (`torch.Tensor.record_stream`). On a source
   * without stream hooks streams are tags whose work is always done, so this only checks arguments.
   * @throws InvalidArgumentError when `address` is not a live block or `stream` is not a stream.
   */
  recordStream(address: number, stream: Stream): void {
    const slot = liveSlot(this.core, address);
    if (slot < 0) {
      throw new InvalidArgumentError(
        'address',
        hex(address),
        'the start of a live block of this pool',
      );
    }
    checkStream(stream);
    recordStreamUse(this.core, slot, stream);
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
    settleParked(this.core);
    processEvents(this.core);
  }

  // ── memory management ─────────────────────────────────────────────────────────────────────

  /**
   * Gives every unused cached segment back to the source (`torch.cuda.empty_cache`): first waits for
   * pending frees where the source can wait (`synchronizeEvent`), then releases every segment whose
   * memory is all free, in the pool and in released private pools.
   */
  emptyCache(): void {
    settleParked(this.core);
    releaseCachedBlocks(this.core);
  }

  /**
   * Gives back at least `bytes` of unused cached segments, and as little more as it can: the single
   * smallest unused segment that covers `bytes`, else unused segments from the largest down until
   * `bytes` are covered. Returns the bytes released (less than asked when not enough is unused).
   */
  release(bytes: number): number {
    settleParked(this.core);
    return releaseBytes(this.core, bytes);
  }

  /**
   * Releases segments that have been entirely free for `decayMs` or longer, by the clock's reading
   * `now`. Returns the bytes released (0 without `decayMs`).
   */
  decay(now?: number): number {
    settleParked(this.core);
    return decay(this.core, now);
  }

  /**
   * Caps the bytes the pool may reserve at `fraction` × `totalMemory`
   * (`torch.cuda.set_per_process_memory_fraction`). Enables garbage collection.
   */
  setMemoryFraction(fraction: number): void {
    settleParked(this.core);
    this.core.setMemoryFraction(fraction);
  }

  /** Bytes the pool may reserve (`Infinity` without a memory fraction). */
  get allowedMemoryBytes(): number {
    return this.core.allowedMemory;
  }

  /** Registers a free-memory callback, run on cache misses; returns its removal. */
  onFreeMemory(callback: FreeMemoryCallback): () => void {
    const callbacks = this.core.callbacks;
    callbacks.push(callback);
    return () => {
      const i = callbacks.indexOf(callback);
      if (i >= 0) callbacks.splice(i, 1);
    };
  }

  // ── private pools ─────────────────────────────────────────────────────────────────────────

  /** A new private pool (`torch.cuda.MemPool`): its own segments, blocks and statistics. */
  createPrivatePool(): PrivatePool {
    return createPrivatePool(this.core);
  }

  /**
   * Routes allocations to `pool` (a new private pool when absent) until the scope is disposed:
   * `using scope = pool.usePrivatePool(); ...`. Frees always go back to the block's own pool.
   * Scopes nest; routing is the pool's state, so keep a scope to synchronous code.
   */
  usePrivatePool(pool: PrivatePool = this.createPrivatePool()): PrivatePoolScope {
    return usePrivatePool(this.core, pool);
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
    settleParked(this.core);
    return poolStatsOf(this.core, null);
  }

  /** `torch.cuda.memory_stats()`: every figure under PyTorch's key, sorted. */
  memoryStats(): MemoryStats {
    return memoryStatsOf(this.poolStats());
  }

  /** Sets every peak to its current value (`torch.cuda.reset_peak_memory_stats`). */
  resetPeakMemoryStats(): void {
    // A counted hot cycle relies on the peaks it was measured against.
    settleParked(this.core);
    this.core.counters.resetPeak();
  }

  /** Zeroes cumulative figures (`torch.cuda.reset_accumulated_memory_stats`). */
  resetAccumulatedMemoryStats(): void {
    settleParked(this.core);
    this.core.counters.resetAccumulated();
  }

  /** Connects a sink for segment and free-completed events; returns its disconnection. */
  attachStatsSink(sink: StatsSink): () => void {
    settleParked(this.core);
    const sinks = this.core.sinks;
    sinks.push(sink);
    return () => {
      const i = sinks.indexOf(sink);
      if (i >= 0) sinks.splice(i, 1);
    };
  }
}

// ── the out-of-memory path ──────────────────────────────────────────────────────────────────

/** PyTorch's `malloc` after a miss, in its order. Returns a free, unindexed block or NIL. */
function allocateSlow(
  p: PoolCore,
  owner: PoolOwner,
  lists: FreeLists,
  stream: Stream,
  size: number,
  rounded: number,
  align: number,
): number {
  if (p.idle !== null && p.idle.size > 0) decay(p);
  let slot = NIL;
  // 1. Free-memory callbacks; when one freed memory, search the cache again.
  if (p.callbacks.length > 0 && runCallbacks(p, rounded, stream)) {
    slot = findFreeBlock(p, lists, stream, rounded, align);
  }
  if (slot !== NIL) {
    unindexBlock(p, owner, lists.small, p.foundIn!, slot);
    return slot;
  }
  // 2. Garbage collection of old cached blocks, under a memory fraction.
  if (p.settings.garbageCollectionThreshold > 0 && p.allowedMemory !== NO_CAP) {
    collectGarbage(p);
  }
  // 3. A new segment (or growth); 4. release oversize cached blocks, retry; 5. release every
  // unused segment, retry.
  slot = allocateSegment(p, owner, lists, stream, rounded, align, false);
  if (slot === NIL && releaseOversize(p, lists, stream, rounded)) {
    slot = allocateSegment(p, owner, lists, stream, rounded, align, false);
  }
  if (slot === NIL && releaseCachedBlocks(p)) {
    slot = allocateSegment(p, owner, lists, stream, rounded, align, true);
  }
  if (slot === NIL) {
    p.counters.numOoms++;
    if (owner.counters !== null) owner.counters.numOoms++;
    p.lastFailure = {
      size,
      alignment: align,
      allocationSize: allocationSize(paddedSize(rounded, align)),
    };
  }
  return slot;
}

function runCallbacks(p: PoolCore, size: number, stream: Stream): boolean {
  let freed = false;
  for (const callback of [...p.callbacks]) {
    if (callback({ size, stream })) freed = true;
  }
  return freed;
}

/** PyTorch's `alloc_block`: a new segment (or growth of an expandable one); its block, unindexed. */
function allocateSegment(
  p: PoolCore,
  owner: PoolOwner,
  lists: FreeLists,
  stream: Stream,
  rounded: number,
  align: number,
  isRetry: boolean,
): number {
  if (isRetry) {
    p.counters.numAllocRetries++;
    if (owner.counters !== null) owner.counters.numAllocRetries++;
  }
  const padding = align > MIN_BLOCK_SIZE ? align - MIN_BLOCK_SIZE : 0;
  const size = allocationSize(rounded + padding);
  if (
    p.allowedMemory !== NO_CAP &&
    p.counters.current(Family.ReservedBytes) + size > p.allowedMemory
  ) {
    return NIL;
  }
  if (p.expandable && owner === p.main) {
    return growExpandable(p, lists.small, stream, rounded, align, padding);
  }
  const region = p.source.acquire(size);
  if (region === null) return NIL;
  return addSegment(p, region, owner, lists.small, stream, false).head;
}
