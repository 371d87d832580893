/**
 * Reporting: read-only views of the pool's state for its callers and for `@allot/stats`: `usage()`,
 * `layout()`, the PyTorch-keyed `poolStats()` report (with the `allocator_settings` of a snapshot)
 * and its flat `memoryStats()` form, and the errors that describe a failure (the out-of-memory
 * error with PyTorch's message and a diagnosis; an invalid free, classified). Nothing here changes
 * the pool.
 *
 * `@allot/stats` consumes these views through its `PoolStatsSource` interface; the pool imports
 * only that package's types, so a user of the pool alone does not install it.
 */
import { InvalidFreeError, type Layout, OutOfMemoryError, type Usage } from '@allot/core';
import type {
  MemoryStats,
  PoolLayoutBlock,
  PoolLayoutSegment,
  PoolStatsReport,
} from '@allot/stats';
import { BlockState, NIL } from './block-store';
import { MIN_BLOCK_SIZE } from './constants';
import { diagnoseOutOfMemory } from './oom-diagnosis';
import { outOfMemoryMessage } from './oom-message';
import { NO_CAP, type PoolCore } from './pool-core';
import { Family } from './pool-counters';
import type { PoolOwner, Segment } from './pool-owner';
import { allocationSize, roundSize } from './size-policy';

/** `usage()` of the whole pool (`only` null) or of one private pool. */
export function usageOf(p: PoolCore, only: PoolOwner | null): Usage {
  const c = only === null ? p.counters : only.counters!;
  const capacity = c.current(Family.ReservedBytes);
  const allocatedBytes = c.current(Family.AllocatedBytes);
  const active = c.current(Family.ActiveBytes);
  let largestFreeBlock = 0;
  for (const owner of only === null ? p.owners() : [only]) {
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

/** `layout()` of the whole pool (`only` null) or of one private pool, in address order. */
export function layoutOf(p: PoolCore, only: PoolOwner | null): Layout {
  const b = p.blocks;
  const segments: PoolLayoutSegment[] = [];
  const all = p.segments.filter(
    (s): s is Segment => s !== undefined && (only === null || s.owner === only),
  );
  all.sort((x, y) => x.address - y.address);
  for (const seg of all) {
    // An expandable segment with unmapped pages shows each mapped run as a segment of its own, as
    // PyTorch's snapshots do.
    let blocks: PoolLayoutBlock[] = [];
    const close = () => {
      if (blocks.length === 0) return;
      const first = blocks[0]!;
      const last = blocks[blocks.length - 1]!;
      segments.push({
        address: first.address,
        size: last.address + last.size - first.address,
        pool: seg.owner.poolName(seg.small),
        stream: seg.stream,
        expandable: seg.expandable,
        blocks,
      });
      blocks = [];
    };
    for (let s = seg.head; s !== NIL; s = b.next[s]!) {
      const state = b.state[s];
      if (state === BlockState.Unmapped) {
        close();
        continue;
      }
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
    close();
  }
  return { segments };
}

/**
 * The free bytes and the largest free block of {@link layoutOf}`(p, null)` (what
 * `fragmentation(layout)` reads of them), walking the blocks without building the layout: cheap
 * enough for every sample of a long replay.
 */
export function freeSpaceOf(p: PoolCore): { freeBytes: number; largestFreeBlock: number } {
  const b = p.blocks;
  let freeBytes = 0;
  let largestFreeBlock = 0;
  for (const seg of p.segments) {
    if (seg === undefined) continue;
    for (let s = seg.head; s !== NIL; s = b.next[s]!) {
      if (b.state[s] !== BlockState.Free) continue;
      const size = b.size[s]!;
      freeBytes += size;
      if (size > largestFreeBlock) largestFreeBlock = size;
    }
  }
  return { freeBytes, largestFreeBlock };
}

/** `poolStats()` of the whole pool (`only` null) or of one private pool. */
export function poolStatsOf(p: PoolCore, only: PoolOwner | null): PoolStatsReport {
  const counters = only === null ? p.counters : only.counters!;
  return { ...counters.report(p.maxSplitSize), allocatorSettings: allocatorSettings(p) };
}

/** Figures of a report, as `memoryStats()` lists them. */
const FIGURES = ['current', 'peak', 'allocated', 'freed'] as const;

/**
 * `torch.cuda.memory_stats()` of a pool's report: `<family>.<pool>.<figure>` for every family of
 * the `all`, `small_pool` and `large_pool` entries, the event counts, `max_split_size` and the
 * oversize figures, under PyTorch's keys, sorted.
 */
export function memoryStatsOf(report: PoolStatsReport): MemoryStats {
  const flat: [string, number][] = [];
  const put = (prefix: string, counter: Readonly<Record<(typeof FIGURES)[number], number>>) => {
    for (const figure of FIGURES) flat.push([`${prefix}.${figure}`, counter[figure]]);
  };
  for (const [pool, families] of Object.entries(report.pools)) {
    for (const [family, counter] of Object.entries(families ?? {})) {
      if (counter !== undefined) put(`${family}.${pool}`, counter);
    }
  }
  flat.push(
    ['num_alloc_retries', report.numAllocRetries ?? 0],
    ['num_ooms', report.numOoms ?? 0],
    ['num_sync_all_streams', report.numSyncAllStreams ?? 0],
    ['num_device_alloc', report.numDeviceAlloc ?? 0],
    ['num_device_free', report.numDeviceFree ?? 0],
    ['max_split_size', report.maxSplitSize ?? -1],
  );
  if (report.oversizeAllocations) put('oversize_allocations', report.oversizeAllocations);
  if (report.oversizeSegments) put('oversize_segments', report.oversizeSegments);
  flat.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  return Object.fromEntries(flat);
}

/** The snapshot's `allocator_settings`, under PyTorch's keys. */
function allocatorSettings(p: PoolCore): PoolStatsReport['allocatorSettings'] {
  const s = p.settings;
  const divisions: Record<string, number> = {};
  s.roundupPower2Divisions.forEach((d, i) => {
    divisions[String(2 ** i)] = d;
  });
  return {
    PYTORCH_CUDA_ALLOC_CONF: p.config,
    max_split_size: s.maxSplitSize === NO_CAP ? -1 : s.maxSplitSize,
    // A Python float in PyTorch's snapshot: `@allot/stats` writes this key as one.
    garbage_collection_threshold: s.garbageCollectionThreshold,
    expandable_segments: p.expandable,
    pinned_num_register_threads: 1,
    release_lock_on_cudamalloc: false,
    pinned_use_cuda_host_register: false,
    roundup_power2_divisions: divisions,
  };
}

/**
 * The error of a failed `allocateOrThrow`: PyTorch's message (from the figures of the last failure)
 * and a fragmentation diagnosis of the pool's layout.
 */
export function outOfMemoryError(
  p: PoolCore,
  size: number,
  alignment: number | undefined,
): OutOfMemoryError {
  const align = Math.max(alignment ?? MIN_BLOCK_SIZE, MIN_BLOCK_SIZE);
  const failure = p.lastFailure ?? {
    size,
    alignment: align,
    allocationSize: allocationSize(roundSize(size, p.divisions)),
  };
  const usage = usageOf(p, null);
  let privateAllocated = 0;
  for (const owner of p.privatePools)
    privateAllocated += owner.counters!.current(Family.AllocatedBytes);
  const message = outOfMemoryMessage({
    sourceKind: p.source.kind,
    allocationSize: failure.allocationSize,
    totalMemory: p.totalMemory,
    allowedMemory: p.allowedMemory,
    reservedBytes: usage.capacity,
    allocatedBytes: usage.allocatedBytes - privateAllocated,
    privateAllocatedBytes: privateAllocated,
  });
  const diagnosis = diagnoseOutOfMemory(p, size, align);
  return new OutOfMemoryError({
    requested: size,
    alignment: align,
    capacity: p.totalMemory === NO_CAP ? usage.capacity : Math.min(p.totalMemory, p.allowedMemory),
    freeBytes: usage.freeBytes,
    largestFreeBlock: usage.largestFreeBlock,
    reason: diagnosis.reason,
    detail: `${message}\n${diagnosis.summary}`,
    diagnosis,
  });
}

/** Why `address` is not a live block: a double free, an interior pointer, or a foreign address. */
export function invalidFree(p: PoolCore, address: number): InvalidFreeError {
  if (typeof address !== 'number' || !Number.isFinite(address)) {
    return new InvalidFreeError(address, 'foreign-address');
  }
  const b = p.blocks;
  for (const seg of p.segments) {
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
