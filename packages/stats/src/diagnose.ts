/**
 * Why an allocation failed: exhaustion (fewer bytes free than requested) or fragmentation (enough
 * bytes free, but no free block can hold the request), with the figures that show it.
 *
 * With a layout the diagnosis is exact and finer: it tells apart a request no free block is large
 * enough for (`fragmentation`), one that a large enough block cannot hold at the requested alignment
 * (`alignment`), and one that some free block could hold but the strategy refused by its own rules —
 * size classes, a limit, a pool that may not grow (`policy`). With only `usage()` figures it tells
 * exhaustion from fragmentation by comparing sizes.
 */
import {
  type Allocator,
  alignUp,
  formatBytes,
  type Layout,
  OutOfMemoryError,
  type OutOfMemoryReason,
  type Usage,
} from '@allot/core';
import { externalFragmentation, type FragmentationFigures, fragmentation } from './fragmentation';

/** The finer cause of a failed request; see the module comment. */
export type OutOfMemoryCause = 'exhaustion' | 'fragmentation' | 'alignment' | 'policy';

/** What `diagnose()` found. Sizes in bytes; ratios in [0, 1]. */
export interface OutOfMemoryDiagnosis {
  /** Core's two-way classification, as carried by `OutOfMemoryError.reason`. */
  readonly reason: OutOfMemoryReason;
  readonly cause: OutOfMemoryCause;
  /** Bytes requested. */
  readonly requested: number;
  /** Alignment requested (at least the allocator's own), in bytes. */
  readonly alignment: number;
  /** Bytes managed (reserved). */
  readonly capacity: number;
  readonly allocatedBytes: number;
  readonly freeBytes: number;
  readonly largestFreeBlock: number;
  /**
   * Largest request that some free block could hold at `alignment` (from a layout); equals
   * `largestFreeBlock` when only usage figures are known.
   */
  readonly largestAlignedFit: number;
  readonly liveCount: number;
  readonly freeBlockCount: number;
  /** `1 − largestFreeBlock / freeBytes`. */
  readonly externalFragmentation: number;
  /** `allocatedBytes / capacity`. */
  readonly utilisation: number;
  /** Bytes that would have to be freed for the request to fit by size alone (0 under fragmentation). */
  readonly shortfall: number;
  /** Full figures when a layout was available. */
  readonly fragmentation?: FragmentationFigures;
  /** A few lines that explain the failure to a person. */
  readonly summary: string;
}

/** What can be diagnosed: an allocator (its layout when it has one, else its usage), a layout, or usage figures. */
export type DiagnosisSource = Allocator | Layout | Usage;

function isAllocator(source: DiagnosisSource): source is Allocator {
  return typeof (source as Allocator).allocate === 'function';
}

function isLayout(source: DiagnosisSource): source is Layout {
  return Array.isArray((source as Layout).segments);
}

/** Largest request that a free block of `layout` can hold at `alignment`. */
function largestAlignedFit(layout: Layout, alignment: number): number {
  let best = 0;
  for (const segment of layout.segments) {
    for (const block of segment.blocks) {
      if (!block.free || block.size <= best) continue;
      const end = block.address + block.size;
      const fit = end - alignUp(block.address, alignment);
      if (fit > best) best = fit;
    }
  }
  return best;
}

function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/**
 * Diagnoses a request of `size` bytes at `alignment` that failed (or would fail) on `source`.
 * @param alignment - bytes, a power of two; defaults to the allocator's alignment (1 for a layout or usage).
 */
export function diagnose(
  source: DiagnosisSource,
  size: number,
  alignment?: number,
): OutOfMemoryDiagnosis {
  let layout: Layout | undefined;
  let usage: Usage | undefined;
  let align = alignment ?? 1;
  if (isAllocator(source)) {
    align = Math.max(alignment ?? source.alignment, source.alignment);
    layout = source.layout?.();
    usage = source.usage();
  } else if (isLayout(source)) {
    layout = source;
  } else {
    usage = source;
  }

  const figures = layout ? fragmentation(layout) : undefined;
  const capacity = usage?.capacity ?? figures!.totalBytes;
  const freeBytes = figures?.freeBytes ?? usage!.freeBytes;
  const largestFreeBlock = figures?.largestFreeBlock ?? usage!.largestFreeBlock;
  const allocatedBytes = figures?.allocatedBytes ?? usage!.allocatedBytes;
  const fit = layout ? largestAlignedFit(layout, align) : largestFreeBlock;

  let cause: OutOfMemoryCause;
  if (freeBytes < size) cause = 'exhaustion';
  else if (largestFreeBlock < size) cause = 'fragmentation';
  else if (fit < size) cause = 'alignment';
  else cause = 'policy';

  const frag = externalFragmentation(largestFreeBlock, freeBytes);
  const freeBlockCount = figures?.freeBlockCount ?? usage!.freeBlockCount;
  const base = {
    reason: (cause === 'exhaustion' ? 'exhaustion' : 'fragmentation') as OutOfMemoryReason,
    cause,
    requested: size,
    alignment: align,
    capacity,
    allocatedBytes,
    freeBytes,
    largestFreeBlock,
    largestAlignedFit: fit,
    liveCount: figures?.liveCount ?? usage!.liveCount,
    freeBlockCount,
    externalFragmentation: frag,
    utilisation: capacity > 0 ? allocatedBytes / capacity : 0,
    shortfall: Math.max(0, size - freeBytes),
  };
  const summary = explain(base);
  return figures ? { ...base, fragmentation: figures, summary } : { ...base, summary };
}

function explain(d: Omit<OutOfMemoryDiagnosis, 'summary' | 'fragmentation'>): string {
  const req = `${formatBytes(d.requested)} (alignment ${d.alignment})`;
  const free = `${formatBytes(d.freeBytes)} free in ${d.freeBlockCount} range${d.freeBlockCount === 1 ? '' : 's'}`;
  const state =
    `${formatBytes(d.allocatedBytes)} allocated in ${d.liveCount} block${d.liveCount === 1 ? '' : 's'} ` +
    `of ${formatBytes(d.capacity)} (${percent(d.utilisation)} used); external fragmentation ` +
    `${percent(d.externalFragmentation)} (1 − largest free / total free).`;
  switch (d.cause) {
    case 'exhaustion':
      return (
        `Exhaustion: requested ${req}, but only ${free}; ${formatBytes(d.shortfall)} more would ` +
        `have to be freed.\n${state}`
      );
    case 'fragmentation':
      return (
        `Fragmentation: requested ${req}; ${free} would hold it, but the largest free block is ` +
        `${formatBytes(d.largestFreeBlock)}.\n${state}`
      );
    case 'alignment':
      return (
        `Alignment: requested ${req}; the largest free block (${formatBytes(d.largestFreeBlock)}) ` +
        `holds at most ${formatBytes(d.largestAlignedFit)} at that alignment.\n${state}`
      );
    case 'policy':
      return (
        `Refused by the strategy's rules: requested ${req}; a free block could hold ` +
        `${formatBytes(d.largestAlignedFit)} at that alignment, but the allocator's own rules ` +
        `(size classes, a limit, a pool that may not grow) refused it.\n${state}`
      );
  }
}

/** An `OutOfMemoryError` for a failed request, carrying `diagnose()`'s result as `diagnosis`. */
export function outOfMemoryError(
  source: DiagnosisSource,
  size: number,
  alignment?: number,
): OutOfMemoryError {
  return errorFromDiagnosis(diagnose(source, size, alignment));
}

/** An `OutOfMemoryError` built from a diagnosis. */
export function errorFromDiagnosis(diagnosis: OutOfMemoryDiagnosis): OutOfMemoryError {
  return new OutOfMemoryError({
    requested: diagnosis.requested,
    alignment: diagnosis.alignment,
    capacity: diagnosis.capacity,
    freeBytes: diagnosis.freeBytes,
    largestFreeBlock: diagnosis.largestFreeBlock,
    reason: diagnosis.reason,
    detail: diagnosis.summary,
    diagnosis,
  });
}
