/**
 * Fragmentation figures from a layout walk (every segment and block of an allocator).
 *
 * - External fragmentation: `1 − largest free block / total free bytes` (0 when nothing or one
 *   range is free; close to 1 when free memory is shattered into many small ranges).
 * - Internal waste: usable bytes of live blocks minus the bytes callers asked for, where the
 *   strategy records the requested size.
 * - Utilisation: allocated bytes / reserved bytes (the sum of segment sizes).
 * - Inactive split bytes: free bytes inside segments that also hold live blocks (PyTorch's
 *   `inactive_split_bytes`: memory a pool cannot give back to the device).
 *
 * One pass over the blocks; nothing is cached, so call it when you need the figures, not per
 * allocation.
 */
import type { Layout } from '@allot/core';
import { HISTOGRAM_BUCKETS, readHistogram, type SizeHistogram, sizeBucket } from './size-histogram';

/** Everything `fragmentation()` computes, in bytes unless stated. */
export interface FragmentationFigures {
  /** Segments in the layout. */
  readonly segmentCount: number;
  /** Sum of segment sizes (reserved bytes). */
  readonly totalBytes: number;
  /** Sum of the sizes of live blocks. */
  readonly allocatedBytes: number;
  /** Sum of requested sizes of live blocks (a block without `requestedSize` counts its size). */
  readonly requestedBytes: number;
  /** Sum of the sizes of free blocks. */
  readonly freeBytes: number;
  /** Bytes of segments covered by no block (a strategy's own overhead). */
  readonly overheadBytes: number;
  /** Size of the largest free block (0 when none). */
  readonly largestFreeBlock: number;
  /** Live blocks. */
  readonly liveCount: number;
  /** Free blocks (free ranges). */
  readonly freeBlockCount: number;
  /** `1 − largestFreeBlock / freeBytes`, in [0, 1); 0 when nothing is free. */
  readonly externalFragmentation: number;
  /** `allocatedBytes − requestedBytes`: bytes lost to rounding inside live blocks. */
  readonly internalWaste: number;
  /** `internalWaste / allocatedBytes`, in [0, 1]; 0 when nothing is allocated. */
  readonly internalWasteRatio: number;
  /** `allocatedBytes / totalBytes`, in [0, 1]; 0 for an empty layout. */
  readonly utilisation: number;
  /** Free bytes in segments that also hold at least one live block. */
  readonly inactiveSplitBytes: number;
  /** Free blocks in segments that also hold at least one live block. */
  readonly inactiveSplitCount: number;
  /** Free-range sizes, power-of-two buckets. */
  readonly freeRangeHistogram: SizeHistogram;
}

/** Computes {@link FragmentationFigures} from a layout. */
export function fragmentation(layout: Layout): FragmentationFigures {
  const counts = new Float64Array(HISTOGRAM_BUCKETS);
  const bytes = new Float64Array(HISTOGRAM_BUCKETS);
  let totalBytes = 0;
  let allocatedBytes = 0;
  let requestedBytes = 0;
  let freeBytes = 0;
  let coveredBytes = 0;
  let largestFreeBlock = 0;
  let liveCount = 0;
  let freeBlockCount = 0;
  let inactiveSplitBytes = 0;
  let inactiveSplitCount = 0;
  for (const segment of layout.segments) {
    totalBytes += segment.size;
    let segmentFree = 0;
    let segmentFreeCount = 0;
    let segmentLive = 0;
    for (const block of segment.blocks) {
      coveredBytes += block.size;
      if (block.free) {
        segmentFree += block.size;
        segmentFreeCount++;
        if (block.size > largestFreeBlock) largestFreeBlock = block.size;
        const k = sizeBucket(block.size);
        counts[k]!++;
        bytes[k]! += block.size;
      } else {
        segmentLive++;
        allocatedBytes += block.size;
        requestedBytes += block.requestedSize ?? block.size;
      }
    }
    freeBytes += segmentFree;
    freeBlockCount += segmentFreeCount;
    liveCount += segmentLive;
    if (segmentLive > 0) {
      inactiveSplitBytes += segmentFree;
      inactiveSplitCount += segmentFreeCount;
    }
  }
  const internalWaste = allocatedBytes - requestedBytes;
  return {
    segmentCount: layout.segments.length,
    totalBytes,
    allocatedBytes,
    requestedBytes,
    freeBytes,
    overheadBytes: totalBytes - coveredBytes,
    largestFreeBlock,
    liveCount,
    freeBlockCount,
    externalFragmentation: externalFragmentation(largestFreeBlock, freeBytes),
    internalWaste,
    internalWasteRatio: allocatedBytes > 0 ? internalWaste / allocatedBytes : 0,
    utilisation: totalBytes > 0 ? allocatedBytes / totalBytes : 0,
    inactiveSplitBytes,
    inactiveSplitCount,
    freeRangeHistogram: readHistogram(counts, bytes),
  };
}

/** `1 − largestFreeBlock / freeBytes`; 0 when nothing is free. */
export function externalFragmentation(largestFreeBlock: number, freeBytes: number): number {
  return freeBytes > 0 ? 1 - largestFreeBlock / freeBytes : 0;
}
