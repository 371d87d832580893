/**
 * What a state dump answers (`Trace.dump`: the segments and blocks of one moment, with no history):
 * who holds the memory, reserved against allocated segment by segment, the largest free block,
 * and, as an estimate, what the same live blocks would need under each setting.
 *
 * ```
 *  dump ─► per segment: allocated, requested, waiting to be freed, free, the largest free block
 *       ─► totals: reserved against allocated; free bytes fragmented (in segments that hold a live
 *          block) or cached (whole free segments); the largest free block
 *       ─► the live blocks' stacks ─► holders by source line, the call tree (holders.ts, stack-tree.ts)
 *       ─► the segment map's data: each block, its state and what made it (runs of tiny blocks merged)
 *  caching rows (each the dump's live blocks allocated into an empty pool: dump-estimate.ts)
 *       ─► the estimate per setting, beside the dump; the tuner's search ─► the advice (advice.ts)
 * ```
 *
 * The segment map's data is described in `dump-layout.ts`. The explanation has the shape of a recording's (`explain.ts`), so `--json`, the report and the
 * app read a dump's holders, split and advice where they read a recording's; it has no timeline,
 * for a dump has no time.
 */
import type { DumpBlockState, DumpSegment, Trace } from '@allot/workloads';
import { formatBytes, formatCount, formatPercent } from '../units';
import { type Advice, adviceOf, adviceParagraph } from './advice';
import { type DumpEstimateBasis, estimateBasis } from './dump-estimate';
import { type DumpLayout, MAP_BLOCK_FIELDS, MAP_STATE } from './dump-layout';
import {
  type Diagnosis,
  type ExplainOptions,
  type Explanation,
  PEAK_TABLE_ROWS,
  REPORT_FRAMES,
  type ReportAllocation,
} from './explain';
import { frameText, holdersOf } from './holders';
import type { RowResult } from './measure';
import { stackSource } from './stack-source';
import { stackTreeOf } from './stack-tree';
import { textTable } from './text-table';

/** Blocks the segment map draws one by one at most; past it, runs of tiny blocks are merged. */
export const DUMP_MAP_BLOCKS = 20_000;

export type { DumpLayout } from './dump-layout';

/** One segment of a dump, in figures. */
export interface DumpSegmentFigures extends Omit<DumpSegment, 'blocks'> {
  /** Bytes of its allocated blocks (as `memory_stats()` counts `allocated_bytes`), and requested. */
  readonly allocatedBytes: number;
  readonly requestedBytes: number;
  /** Bytes of blocks freed by the program and still in use on another stream. */
  readonly pendingFreeBytes: number;
  readonly freeBytes: number;
  readonly largestFreeBytes: number;
  readonly allocatedBlocks: number;
  readonly pendingFreeBlocks: number;
  readonly freeBlocks: number;
}

/** One caching row's estimate. */
export interface EstimateRow {
  readonly allocator: string;
  readonly config: string;
  readonly peakReservedBytes: number;
  /** Segment allocations (cudaMalloc calls, and maps of expandable segments). */
  readonly segmentCalls: number;
  readonly failures: number;
}

/** What the same live blocks need under each setting: an estimate (see `dump-estimate.ts`). */
export interface DumpEstimate extends DumpEstimateBasis {
  readonly rows: readonly EstimateRow[];
  /**
   * The row with the dump's own settings (its `allocator_settings`, else PyTorch's defaults,
   * `assumedSettings`), against what the dump holds: the difference is what the dump's history
   * left (holes, segments its freed blocks made) or, when negative, what packing in address order
   * could not do as well.
   */
  readonly own?: EstimateRow & {
    readonly assumedSettings: boolean;
    readonly dumpReservedBytes: number;
  };
}

/** A state dump in figures (see the module comment). */
export interface DumpFigures {
  /** Entries its device's trace holds, none an allocation. */
  readonly entries: number;
  readonly segments: number;
  readonly reservedBytes: number;
  readonly allocatedBytes: number;
  readonly requestedBytes: number;
  readonly pendingFreeBytes: number;
  readonly freeBytes: number;
  /** Free bytes in segments that hold a live block, and in segments that hold none. */
  readonly fragmentedBytes: number;
  readonly cachedBytes: number;
  readonly allocatedBlocks: number;
  readonly pendingFreeBlocks: number;
  readonly freeBlocks: number;
  /** The largest free block: its bytes, its segment's address and its offset there. */
  readonly largestFree: {
    readonly bytes: number;
    readonly segment: number;
    readonly offset: number;
  } | null;
  /** `1 − largest free block / free bytes` (0 with nothing free). */
  readonly externalFragmentation: number;
  /** Every segment, in address order. */
  readonly bySegment: readonly DumpSegmentFigures[];
  readonly estimate: DumpEstimate;
  /** What the segment map draws (left out of `--json`). */
  readonly layout: DumpLayout;
}

/** The figures of each segment of `trace`'s dump (see the module comment). */
function segmentFigures(trace: Trace): DumpSegmentFigures[] {
  return trace.dump!.segments.map((segment) => {
    const sums = { allocated: 0, requested: 0, pending: 0, free: 0, largest: 0 };
    const counts: Record<DumpBlockState, number> = { allocated: 0, 'pending-free': 0, free: 0 };
    for (const block of segment.blocks) {
      counts[block.state]++;
      if (block.state === 'allocated') {
        sums.allocated += block.size;
        sums.requested += block.requested;
      } else if (block.state === 'pending-free') {
        sums.pending += block.size;
      } else {
        sums.free += block.size;
        sums.largest = Math.max(sums.largest, block.size);
      }
    }
    const { address, size, pool, stream, expandable } = segment;
    return {
      address,
      size,
      pool,
      stream,
      expandable,
      allocatedBytes: sums.allocated,
      requestedBytes: sums.requested,
      pendingFreeBytes: sums.pending,
      freeBytes: sums.free,
      largestFreeBytes: sums.largest,
      allocatedBlocks: counts.allocated,
      pendingFreeBlocks: counts['pending-free'],
      freeBlocks: counts.free,
    };
  });
}

/** The segment map's data (see {@link DumpLayout}), at most about `maxBlocks` runs. */
export function dumpLayout(trace: Trace, maxBlocks = DUMP_MAP_BLOCKS): DumpLayout {
  const dump = trace.dump!;
  let blocks = 0;
  let reserved = 0;
  for (const segment of dump.segments) {
    blocks += segment.blocks.length;
    reserved += segment.size;
  }
  // Past the budget, blocks smaller than this merge with their neighbours.
  const grain = blocks > maxBlocks ? reserved / maxBlocks : 0;
  const { list: sources, index } = textTable();
  const sourceOf = (id: number): number => {
    if (id < 0 || trace.frames === undefined || trace.frames.size === 0) return -1;
    return index(stackSource(trace.frames.get(id)).text);
  };
  let merged = 0;
  const segments = dump.segments.map((segment) => {
    const runs: number[] = [];
    for (const block of segment.blocks) {
      const state = MAP_STATE[block.state];
      const last = runs.length - MAP_BLOCK_FIELDS;
      const small = block.size < grain;
      if (small && last >= 0 && runs[last + 1]! < grain) {
        // Merge into the run before, which is as small: one run of mixed (or one) state.
        runs[last + 1] = block.offset + block.size - runs[last]!;
        runs[last + 2] = runs[last + 1]!;
        if (runs[last + 3] !== state) runs[last + 3] = MAP_STATE.mixed;
        runs[last + 4] = -1;
        merged++;
        continue;
      }
      runs.push(block.offset, block.size, block.requested, state, sourceOf(block.id));
    }
    const { address, size, pool, stream, expandable } = segment;
    return { address, size, pool, stream, expandable, blocks: runs };
  });
  return { segments, sources, merged };
}

/** A row's estimate, as the dump's figures list it. */
function estimateRow(row: RowResult): EstimateRow {
  return {
    allocator: row.allocator,
    config: row.config ?? '',
    peakReservedBytes: row.peakReservedBytes,
    segmentCalls: row.segments ? row.segments.acquired + row.segments.grown : 0,
    failures: row.failures,
  };
}

/**
 * `trace`'s dump in figures, with the estimates of the caching `rows` (each the dump's live blocks
 * allocated into an empty pool), `ownRow` the one with the dump's own settings.
 */
export function dumpFigures(
  trace: Trace,
  rows: readonly RowResult[],
  ownRow?: string,
): DumpFigures {
  const bySegment = segmentFigures(trace);
  const total = {
    reserved: 0,
    allocated: 0,
    requested: 0,
    pending: 0,
    free: 0,
    fragmented: 0,
    cached: 0,
    allocatedBlocks: 0,
    pendingFreeBlocks: 0,
    freeBlocks: 0,
  };
  let largestFree: DumpFigures['largestFree'] = null;
  for (const segment of bySegment) {
    total.reserved += segment.size;
    total.allocated += segment.allocatedBytes;
    total.requested += segment.requestedBytes;
    total.pending += segment.pendingFreeBytes;
    total.free += segment.freeBytes;
    total.allocatedBlocks += segment.allocatedBlocks;
    total.pendingFreeBlocks += segment.pendingFreeBlocks;
    total.freeBlocks += segment.freeBlocks;
    if (segment.allocatedBlocks + segment.pendingFreeBlocks > 0) {
      total.fragmented += segment.freeBytes;
    } else {
      total.cached += segment.freeBytes;
    }
    if (segment.largestFreeBytes > (largestFree?.bytes ?? 0)) {
      const block = trace
        .dump!.segments.find((s) => s.address === segment.address)!
        .blocks.find((b) => b.state === 'free' && b.size === segment.largestFreeBytes)!;
      largestFree = {
        bytes: segment.largestFreeBytes,
        segment: segment.address,
        offset: block.offset,
      };
    }
  }
  const estimates = rows.filter((row) => row.kind === 'pool').map(estimateRow);
  const own = estimates.find((row) => row.allocator === ownRow);
  return {
    entries: trace.dump!.entries,
    segments: bySegment.length,
    reservedBytes: total.reserved,
    allocatedBytes: total.allocated,
    requestedBytes: total.requested,
    pendingFreeBytes: total.pending,
    freeBytes: total.free,
    fragmentedBytes: total.fragmented,
    cachedBytes: total.cached,
    allocatedBlocks: total.allocatedBlocks,
    pendingFreeBlocks: total.pendingFreeBlocks,
    freeBlocks: total.freeBlocks,
    largestFree,
    externalFragmentation: total.free > 0 ? 1 - (largestFree?.bytes ?? 0) / total.free : 0,
    bySegment,
    estimate: {
      ...estimateBasis(trace)!,
      rows: estimates,
      ...(own !== undefined
        ? {
            own: {
              ...own,
              assumedSettings: typeof trace.meta.torchAllocConf !== 'string',
              dumpReservedBytes: total.reserved,
            },
          }
        : {}),
    },
    layout: dumpLayout(trace),
  };
}

/** The split of a dump's reserved bytes, in a sentence (the diagnosis's). */
function splitText(figures: DumpFigures): string {
  const live = figures.allocatedBytes + figures.pendingFreeBytes;
  const share = (bytes: number) =>
    figures.reservedBytes > 0 ? ` (${formatPercent(bytes / figures.reservedBytes, 0)})` : '';
  const blocks = figures.allocatedBlocks + figures.pendingFreeBlocks;
  const pending =
    figures.pendingFreeBlocks > 0
      ? `, ${formatBytes(figures.pendingFreeBytes)} of it in ${formatCount(figures.pendingFreeBlocks)} blocks freed and waiting for another stream`
      : '';
  const largest = figures.largestFree
    ? ` The largest free block is ${formatBytes(figures.largestFree.bytes)}, in the segment at 0x${figures.largestFree.segment.toString(16)}: ` +
      `external fragmentation ${formatPercent(figures.externalFragmentation)}.`
    : ' No block is free.';
  return (
    `At the dump, PyTorch held ${formatBytes(figures.reservedBytes)} in ${formatCount(figures.segments)} ${figures.segments === 1 ? 'segment' : 'segments'}: ` +
    `${formatBytes(live)}${share(live)} in ${formatCount(blocks)} live ${blocks === 1 ? 'block' : 'blocks'} (${formatBytes(figures.allocatedBytes)} allocated, ` +
    `as memory_stats() counts allocated_bytes, for ${formatBytes(figures.requestedBytes)} requested${pending}); ` +
    `${formatBytes(figures.fragmentedBytes)}${share(figures.fragmentedBytes)} free but fragmented, in segments that also hold live blocks, ` +
    'so only a request that fits a gap can use it and empty_cache() cannot release it; ' +
    `and ${formatBytes(figures.cachedBytes)}${share(figures.cachedBytes)} cached and reusable, in whole free segments.${largest}`
  );
}

/** What to do, in a line, from the dump's split and the advice. */
function actionOf(figures: DumpFigures, advice: Advice | undefined, biggest: number): string {
  const reserved = figures.reservedBytes;
  if (advice && advice.config !== null && advice.config !== '') {
    return (
      `Set PYTORCH_CUDA_ALLOC_CONF=${advice.config}: an estimated ${formatBytes(advice.peakReservedBytes)} ` +
      `for these blocks instead of ${formatBytes(advice.defaultsPeakReservedBytes)} with the defaults (an estimate: see its assumption).`
    );
  }
  if (advice && advice.config === null) return `${advice.headline}: ${advice.summary}`;
  if (reserved > 0 && figures.fragmentedBytes > 0.25 * reserved) {
    return advice
      ? `Fragmentation holds ${formatBytes(figures.fragmentedBytes)}, and no setting is estimated to hold these blocks in less (see the advice): free the ${formatBytes(biggest)} blocks sooner, or record history (torch.cuda.memory._record_memory_history()) to see which requests split the segments.`
      : `Fragmentation holds ${formatBytes(figures.fragmentedBytes)}: try expandable_segments:True, or record history (torch.cuda.memory._record_memory_history()) to see which requests split the segments.`;
  }
  if (reserved > 0 && figures.cachedBytes > 0.25 * reserved) {
    return `${formatBytes(figures.cachedBytes)} are cached in whole free segments: PyTorch reuses them, and torch.cuda.empty_cache() gives them back to the driver for other processes.`;
  }
  if (reserved > 0 && figures.allocatedBytes >= 0.75 * reserved) {
    return `Reserved memory is mostly live data: to hold less, keep fewer of the ${formatBytes(biggest)} blocks live (smaller batches; in training, activation checkpointing).`;
  }
  return advice ? `${advice.headline}. ${advice.because}` : 'Nothing stands out in the dump.';
}

/**
 * The explanation of a state dump (see the module comment): its live blocks' holders and call
 * tree, its split of reserved bytes, the advice of the tuner's estimate, and no timeline.
 */
export function explainDump(
  trace: Trace,
  figures: DumpFigures,
  options: ExplainOptions = {},
): Explanation {
  const blocks = Array.from({ length: trace.allocCount }, (_, id) => id);
  const bytesOf = (block: number) => trace.size[block]!;
  let live = 0;
  for (const block of blocks) live += bytesOf(block);
  const bySizes = new Map<number, { size: number; count: number; bytes: number }>();
  for (const block of blocks) {
    const size = bytesOf(block);
    const group = bySizes.get(size) ?? { size, count: 0, bytes: 0 };
    group.count++;
    group.bytes += size;
    bySizes.set(size, group);
  }
  const bySize = [...bySizes.values()].sort((a, b) => b.bytes - a.bytes).slice(0, 6);
  const stacked = trace.frames !== undefined && trace.frames.size > 0;
  const largest = [...blocks]
    .sort((a, b) => bytesOf(b) - bytesOf(a) || a - b)
    .slice(0, PEAK_TABLE_ROWS)
    .map((block): ReportAllocation => {
      const stack = trace.frames?.get(block);
      return {
        id: block,
        size: bytesOf(block),
        allocEvent: block,
        freeEvent: -1,
        stream: trace.stream ? trace.stream[block]! : 0,
        ...(stack ? { frames: stack.slice(0, REPORT_FRAMES).map(frameText) } : {}),
        ...(stacked ? { source: stackSource(stack).text } : {}),
      };
    });
  const stacks = stackTreeOf(trace, blocks, bytesOf);
  const advice = options.tuning ? adviceOf(options.tuning) : undefined;
  const biggest = bySize[0]?.size ?? 0;
  const sizes = bySize
    .slice(0, 3)
    .map((g) => `${formatCount(g.count)} × ${formatBytes(g.size)} (${formatBytes(g.bytes)})`)
    .join(', ');
  const diagnosis: Diagnosis = {
    row: 'the dump',
    reservedBytes: figures.reservedBytes,
    liveBytes: figures.allocatedBytes + figures.pendingFreeBytes,
    fragmentedBytes: figures.fragmentedBytes,
    cachedBytes: figures.cachedBytes,
    split: splitText(figures),
    peak:
      'A state dump holds one moment: no allocation before it was recorded, so there is no peak over time, ' +
      `and PyTorch's own peak (reserved_bytes.all.peak) may have been higher.${sizes !== '' ? ` The sizes holding most of it: ${sizes}.` : ''}`,
    ...(advice ? { advice: adviceParagraph(advice) } : {}),
    action: actionOf(figures, advice, biggest),
  };
  return {
    gridEvents: [],
    liveBytes: [],
    timeline: { allocations: [], rest: [], total: trace.allocCount },
    peak: {
      event: trace.length - 1,
      liveBytes: live,
      largest,
      bySize,
      bySource: holdersOf(trace, blocks, bytesOf),
      ...(stacks ? { stacks } : {}),
    },
    diagnosis,
    ...(advice ? { advice } : {}),
    ...(options.recordedRow !== undefined ? { recordedRow: options.recordedRow } : {}),
  };
}
