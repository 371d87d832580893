/**
 * Why a request failed, from the pool's own blocks: the `diagnosis` of the pool's out-of-memory
 * error, shaped as `@allot/stats`' `OutOfMemoryDiagnosis` (a type-only import: the pool computes it
 * itself, in one pass over its segments, so it does not need the stats package at run time).
 *
 * The cause, in order: exhaustion (fewer bytes cached than requested), fragmentation (enough bytes
 * cached, but no cached block that large), alignment (a large enough block, but not at the requested
 * alignment), policy (a cached block could hold it, but PyTorch's rules kept it from serving the
 * request: the oversize rules, the small/large split, streams, the memory fraction). Wrapped by
 * `withStats`, the pool is diagnosed by `@allot/stats` instead, with the full fragmentation figures.
 */
import { alignUp, formatBytes, type OutOfMemoryReason } from '@allot/core';
import type { OutOfMemoryCause, OutOfMemoryDiagnosis } from '@allot/stats';
import { BlockState, NIL } from './block-store';
import type { PoolCore } from './pool-core';
import { Family } from './pool-counters';

const CAUSE_LINE: Readonly<Record<OutOfMemoryCause, string>> = {
  exhaustion: 'Exhaustion: fewer bytes are cached than requested',
  fragmentation: 'Fragmentation: enough bytes are cached, but no cached block is that large',
  alignment: 'Alignment: a cached block is large enough, but not at the requested alignment',
  policy:
    "Refused by the pool's rules: a cached block could hold the request, but the oversize rules, " +
    'the small/large split or its stream kept it from serving it',
};

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Diagnoses a request of `size` bytes at `align` (at least 512) that failed on the pool. */
export function diagnoseOutOfMemory(
  p: PoolCore,
  size: number,
  align: number,
): OutOfMemoryDiagnosis {
  const b = p.blocks;
  let freeBytes = 0;
  let largestFreeBlock = 0;
  let largestAlignedFit = 0;
  let freeBlockCount = 0;
  let allocatedBytes = 0;
  let liveCount = 0;
  for (const seg of p.segments) {
    if (seg === undefined) continue;
    for (let s = seg.head; s !== NIL; s = b.next[s]!) {
      const blockSize = b.size[s]!;
      if (b.state[s] === BlockState.Unmapped) continue; // not reserved: neither free nor in use
      if (b.state[s] !== BlockState.Free) {
        // Allocated, or freed but waiting for streams: not free in a layout either.
        allocatedBytes += blockSize;
        liveCount++;
        continue;
      }
      freeBytes += blockSize;
      freeBlockCount++;
      if (blockSize > largestFreeBlock) largestFreeBlock = blockSize;
      const address = b.address[s]!;
      const fit = address + blockSize - alignUp(address, align);
      if (fit > largestAlignedFit) largestAlignedFit = fit;
    }
  }
  const capacity = p.counters.current(Family.ReservedBytes);
  const cause: OutOfMemoryCause =
    freeBytes < size
      ? 'exhaustion'
      : largestFreeBlock < size
        ? 'fragmentation'
        : largestAlignedFit < size
          ? 'alignment'
          : 'policy';
  const reason: OutOfMemoryReason = cause === 'exhaustion' ? 'exhaustion' : 'fragmentation';
  const externalFragmentation = freeBytes > 0 ? 1 - largestFreeBlock / freeBytes : 0;
  const utilisation = capacity > 0 ? allocatedBytes / capacity : 0;
  const shortfall = Math.max(0, size - freeBytes);
  const summary =
    `${CAUSE_LINE[cause]}: requested ${formatBytes(size)} (alignment ${align}); ` +
    `${formatBytes(freeBytes)} cached in ${plural(freeBlockCount, 'block')}, the largest ` +
    `${formatBytes(largestFreeBlock)} (${formatBytes(largestAlignedFit)} at that alignment)` +
    `${shortfall > 0 ? `; ${formatBytes(shortfall)} more would have to be freed` : ''}.\n` +
    `${formatBytes(allocatedBytes)} in use in ${plural(liveCount, 'block')} of ` +
    `${formatBytes(capacity)} reserved (${(utilisation * 100).toFixed(1)}%); external ` +
    `fragmentation ${(externalFragmentation * 100).toFixed(1)}% (1 − largest cached / cached).`;
  return {
    reason,
    cause,
    requested: size,
    alignment: align,
    capacity,
    allocatedBytes,
    freeBytes,
    largestFreeBlock,
    largestAlignedFit,
    liveCount,
    freeBlockCount,
    externalFragmentation,
    utilisation,
    shortfall,
    summary,
  };
}
