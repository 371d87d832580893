/**
 * `memoryStats()`: a pool's statistics under the exact keys of `torch.cuda.memory_stats()`.
 */
import type { Counter, MemoryStats, PoolStatsReport, StatFamily } from '@allot/stats';

const FAMILIES: readonly StatFamily[] = [
  'allocated_bytes',
  'reserved_bytes',
  'active_bytes',
  'inactive_split_bytes',
  'requested_bytes',
  'allocation',
  'segment',
  'active',
  'inactive_split',
];
const FIGURES = ['current', 'peak', 'allocated', 'freed'] as const;
const ZERO: Counter = { current: 0, peak: 0, allocated: 0, freed: 0 };

function put(out: Record<string, number>, prefix: string, counter: Counter | undefined): void {
  for (const figure of FIGURES) out[`${prefix}.${figure}`] = (counter ?? ZERO)[figure];
}

/** Flattens a pool report into PyTorch's keys, sorted. */
export function flattenPoolStats(report: PoolStatsReport): MemoryStats {
  const out: Record<string, number> = {};
  for (const pool of ['all', 'small_pool', 'large_pool'] as const) {
    for (const family of FAMILIES) put(out, `${family}.${pool}`, report.pools[pool]?.[family]);
  }
  out.num_alloc_retries = report.numAllocRetries ?? 0;
  out.num_ooms = report.numOoms ?? 0;
  out.num_sync_all_streams = report.numSyncAllStreams ?? 0;
  out.num_device_alloc = report.numDeviceAlloc ?? 0;
  out.num_device_free = report.numDeviceFree ?? 0;
  out.max_split_size = report.maxSplitSize ?? -1;
  put(out, 'oversize_allocations', report.oversizeAllocations);
  put(out, 'oversize_segments', report.oversizeSegments);
  const sorted: Record<string, number> = {};
  for (const key of Object.keys(out).sort()) sorted[key] = out[key]!;
  return sorted;
}
