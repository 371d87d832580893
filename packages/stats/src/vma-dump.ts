/**
 * VMA's JSON dump (`vmaBuildStatsString` with detailed map; schema `GpuMemDump.schema.json`), both
 * ways: export a layout so VMA's GpuMemDumpVis can draw it, and read a dump into a layout so its
 * fragmentation figures can be computed.
 *
 * Mapping: each layout segment is one VMA block; each layout block a sub-allocation with its offset
 * in the segment (free blocks have type `FREE`, live ones `UNKNOWN`). Segments without a pool go to
 * `DefaultPools["Type 0"]`; segments of a named pool to a custom pool of that name under "Type 0".
 * Reading a dump, dedicated allocations become segments holding one live block, and segments are
 * placed one after another in a synthetic address space (a dump has no addresses).
 */
import type { Layout, LayoutBlock, LayoutSegment } from '@allot/core';

/** VMA's statistics object. */
export interface VmaStats {
  readonly BlockCount: number;
  readonly BlockBytes: number;
  readonly AllocationCount: number;
  readonly AllocationBytes: number;
  readonly UnusedRangeCount: number;
  readonly AllocationSizeMin?: number;
  readonly AllocationSizeMax?: number;
  readonly UnusedRangeSizeMin?: number;
  readonly UnusedRangeSizeMax?: number;
}

export interface VmaSuballocation {
  readonly Offset: number;
  readonly Type: string;
  readonly Size: number;
  readonly Usage?: number;
  readonly CustomData?: string;
  readonly Name?: string;
  readonly Layout?: number;
}

export interface VmaBlock {
  readonly MapRefCount?: number;
  readonly TotalBytes: number;
  readonly UnusedBytes: number;
  readonly Allocations: number;
  readonly UnusedRanges: number;
  readonly Suballocations?: readonly VmaSuballocation[];
}

export interface VmaDedicatedAllocation {
  readonly Type: string;
  readonly Size: number;
  readonly Usage?: number;
  readonly CustomData?: string;
  readonly Name?: string;
  readonly Layout?: number;
}

export interface VmaPool {
  readonly Name?: string;
  readonly Flags?: readonly string[];
  readonly PreferredBlockSize?: number;
  readonly Blocks?: Readonly<Record<string, VmaBlock>>;
  readonly DedicatedAllocations?: readonly VmaDedicatedAllocation[];
}

/** A VMA JSON dump. */
export interface VmaDump {
  readonly General: { readonly API: 'Vulkan' | 'Direct3D 12'; readonly GPU: string };
  readonly Total: VmaStats;
  readonly MemoryInfo: Readonly<
    Record<
      string,
      {
        readonly Flags?: readonly string[];
        readonly Size?: number;
        readonly Budget: { readonly BudgetBytes?: number; readonly UsageBytes?: number };
        readonly Stats: VmaStats;
        readonly MemoryPools?: Readonly<
          Record<string, { readonly Flags?: readonly string[]; readonly Stats?: VmaStats }>
        >;
      }
    >
  >;
  readonly DefaultPools?: Readonly<Record<string, VmaPool>>;
  readonly CustomPools?: Readonly<Record<string, readonly VmaPool[]>>;
}

export interface VmaDumpOptions {
  /** `General.GPU`. @defaultValue 'allot' */
  readonly gpu?: string;
  /** `General.API`. @defaultValue 'Vulkan' */
  readonly api?: 'Vulkan' | 'Direct3D 12';
  /** Heap size in bytes. @defaultValue the layout's total bytes */
  readonly heapSize?: number;
  /** Budget in bytes. @defaultValue the heap size */
  readonly budgetBytes?: number;
  /** `PreferredBlockSize` of the pools, in bytes. @defaultValue the largest segment */
  readonly preferredBlockSize?: number;
}

const MEMORY_TYPE = 'Type 0';
const HEAP = 'Heap 0';

class StatsAccumulator {
  blockCount = 0;
  blockBytes = 0;
  allocationCount = 0;
  allocationBytes = 0;
  unusedRangeCount = 0;
  allocationMin = Number.POSITIVE_INFINITY;
  allocationMax = 0;
  unusedMin = Number.POSITIVE_INFINITY;
  unusedMax = 0;

  add(segment: LayoutSegment): void {
    this.blockCount++;
    this.blockBytes += segment.size;
    for (const block of segment.blocks) {
      if (block.free) {
        this.unusedRangeCount++;
        this.unusedMin = Math.min(this.unusedMin, block.size);
        this.unusedMax = Math.max(this.unusedMax, block.size);
      } else {
        this.allocationCount++;
        this.allocationBytes += block.size;
        this.allocationMin = Math.min(this.allocationMin, block.size);
        this.allocationMax = Math.max(this.allocationMax, block.size);
      }
    }
  }

  result(): VmaStats {
    return {
      BlockCount: this.blockCount,
      BlockBytes: this.blockBytes,
      AllocationCount: this.allocationCount,
      AllocationBytes: this.allocationBytes,
      UnusedRangeCount: this.unusedRangeCount,
      ...(this.allocationCount > 0
        ? { AllocationSizeMin: this.allocationMin, AllocationSizeMax: this.allocationMax }
        : {}),
      ...(this.unusedRangeCount > 0
        ? { UnusedRangeSizeMin: this.unusedMin, UnusedRangeSizeMax: this.unusedMax }
        : {}),
    };
  }
}

function vmaBlock(segment: LayoutSegment): VmaBlock {
  let unused = 0;
  let allocations = 0;
  let unusedRanges = 0;
  const suballocations: VmaSuballocation[] = [];
  for (const block of segment.blocks) {
    if (block.free) {
      unused += block.size;
      unusedRanges++;
    } else {
      allocations++;
    }
    suballocations.push({
      Offset: block.address - segment.address,
      Type: block.free ? 'FREE' : 'UNKNOWN',
      Size: block.size,
      ...(block.free ? {} : { Usage: 0 }),
    });
  }
  return {
    MapRefCount: 0,
    TotalBytes: segment.size,
    UnusedBytes: unused,
    Allocations: allocations,
    UnusedRanges: unusedRanges,
    Suballocations: suballocations,
  };
}

/** Exports `layout` as a VMA JSON dump object (`JSON.stringify` it to write the file). */
export function toVmaDump(layout: Layout, options: VmaDumpOptions = {}): VmaDump {
  const total = new StatsAccumulator();
  let largest = 0;
  const defaults: Record<string, VmaBlock> = {};
  const custom = new Map<string, Record<string, VmaBlock>>();
  for (const segment of layout.segments) {
    total.add(segment);
    largest = Math.max(largest, segment.size);
    if (segment.pool === undefined) {
      defaults[String(Object.keys(defaults).length)] = vmaBlock(segment);
    } else {
      let blocks = custom.get(segment.pool);
      if (!blocks) custom.set(segment.pool, (blocks = {}));
      blocks[String(Object.keys(blocks).length)] = vmaBlock(segment);
    }
  }
  const stats = total.result();
  const heapSize = options.heapSize ?? stats.BlockBytes;
  const preferredBlockSize = options.preferredBlockSize ?? largest;
  return {
    General: { API: options.api ?? 'Vulkan', GPU: options.gpu ?? 'allot' },
    Total: stats,
    MemoryInfo: {
      [HEAP]: {
        Flags: [],
        Size: heapSize,
        Budget: { BudgetBytes: options.budgetBytes ?? heapSize, UsageBytes: stats.BlockBytes },
        Stats: stats,
        MemoryPools: { [MEMORY_TYPE]: { Flags: [], Stats: stats } },
      },
    },
    DefaultPools: {
      [MEMORY_TYPE]: { PreferredBlockSize: preferredBlockSize, Blocks: defaults },
    },
    ...(custom.size > 0
      ? {
          CustomPools: {
            [MEMORY_TYPE]: [...custom].map(([name, blocks]) => ({
              Name: name,
              Flags: [],
              PreferredBlockSize: preferredBlockSize,
              Blocks: blocks,
            })),
          },
        }
      : {}),
  };
}

/**
 * Reads a VMA JSON dump into a layout: one segment per VMA block (pool `"<type>"` or
 * `"<type>/<custom pool name>"`) and one per dedicated allocation (pool `".../dedicated"`).
 */
export function vmaDumpToLayout(dump: VmaDump): Layout {
  const segments: LayoutSegment[] = [];
  let next = 0;
  const addPool = (pool: VmaPool, label: string): void => {
    for (const block of Object.values(pool.Blocks ?? {})) {
      const address = next;
      const blocks: LayoutBlock[] = (block.Suballocations ?? []).map((sub) => ({
        address: address + sub.Offset,
        size: sub.Size,
        free: sub.Type === 'FREE',
      }));
      segments.push({ address, size: block.TotalBytes, blocks, pool: label });
      next += block.TotalBytes;
    }
    for (const dedicated of pool.DedicatedAllocations ?? []) {
      const address = next;
      segments.push({
        address,
        size: dedicated.Size,
        blocks: [{ address, size: dedicated.Size, free: false }],
        pool: `${label}/dedicated`,
      });
      next += dedicated.Size;
    }
  };
  for (const [type, pool] of Object.entries(dump.DefaultPools ?? {})) addPool(pool, type);
  for (const [type, pools] of Object.entries(dump.CustomPools ?? {})) {
    for (const [i, pool] of pools.entries()) addPool(pool, `${type}/${pool.Name ?? String(i)}`);
  }
  return { segments };
}
