import type { Layout, LayoutSegment, Usage } from './allocator';

/** Usage of allocators that manage disjoint memory, added together. */
export function sumUsage(parts: readonly Usage[]): Usage {
  let capacity = 0;
  let allocatedBytes = 0;
  let freeBytes = 0;
  let overheadBytes = 0;
  let largestFreeBlock = 0;
  let liveCount = 0;
  let freeBlockCount = 0;
  for (const u of parts) {
    capacity += u.capacity;
    allocatedBytes += u.allocatedBytes;
    freeBytes += u.freeBytes;
    overheadBytes += u.overheadBytes;
    if (u.largestFreeBlock > largestFreeBlock) largestFreeBlock = u.largestFreeBlock;
    liveCount += u.liveCount;
    freeBlockCount += u.freeBlockCount;
  }
  return {
    capacity,
    allocatedBytes,
    freeBytes,
    overheadBytes,
    largestFreeBlock,
    liveCount,
    freeBlockCount,
  };
}

/** Layouts of several children, each segment labelled with the child's pool name. */
export function labelledLayout(
  parts: readonly { readonly pool: string; readonly layout: (() => Layout) | undefined }[],
): Layout {
  const segments: LayoutSegment[] = [];
  for (const { pool, layout } of parts) {
    if (!layout) continue;
    for (const segment of layout().segments) {
      segments.push({ ...segment, pool: segment.pool ? `${pool}/${segment.pool}` : pool });
    }
  }
  return { segments };
}
