/**
 * What PyTorch's `torch.cuda.memory_stats()` said at the moment of a dump, read from the dump's end
 * state (its `segments` and their blocks), under the same keys: `reserved_bytes.all.current`,
 * `inactive_split_bytes.large_pool.current`, ... The counts of allocations and frees since the
 * process began are not in a snapshot, so only the `current` figures are.
 *
 * ```
 *  segment ─► reserved (total_size), segment count              pool: segment_type small | large
 *  block   ─► active_allocated: allocated, active, requested     (all = both pools)
 *             active_pending_free: active, requested
 *             inactive in a segment of several blocks: inactive_split (what empty_cache cannot free)
 * ```
 *
 * A block's `requested_size` is its size where the dump records none (as the reader keeps it).
 * Browser-safe: no Node module.
 */
import type { EndSegment } from '@allot/workloads';

/** The pools `memory_stats()` breaks its figures down by. */
export const STAT_POOLS = ['all', 'small_pool', 'large_pool'] as const;

/** The `memory_stats()` families a dump states, each `FAMILY.POOL.current`. */
export const STAT_FAMILIES = [
  'reserved_bytes',
  'allocated_bytes',
  'active_bytes',
  'requested_bytes',
  'inactive_split_bytes',
  'segment',
  'allocation',
  'active',
  'inactive_split',
] as const;

export type StatFamily = (typeof STAT_FAMILIES)[number];
export type StatPool = (typeof STAT_POOLS)[number];

/** `memory_stats()`-style figures: `stats[family][pool]`, in bytes or counts. */
export type DumpStats = Readonly<Record<StatFamily, Readonly<Record<StatPool, number>>>>;

/** The figures of `device` in a dump's end state (its segments, as the reader records them). */
export function dumpStats(segments: readonly EndSegment[] | undefined, device: number): DumpStats {
  const stats = Object.fromEntries(
    STAT_FAMILIES.map((family) => [family, { all: 0, small_pool: 0, large_pool: 0 }]),
  ) as Record<StatFamily, Record<StatPool, number>>;
  const add = (family: StatFamily, pool: StatPool, value: number) => {
    stats[family].all += value;
    stats[family][pool] += value;
  };
  for (const segment of segments ?? []) {
    if (segment.device !== device || !Number.isFinite(segment.size)) continue;
    const pool: StatPool = segment.pool === 'small' ? 'small_pool' : 'large_pool';
    add('reserved_bytes', pool, segment.size);
    add('segment', pool, 1);
    for (const block of segment.blocks) {
      if (block.active) {
        add('active_bytes', pool, block.size);
        add('active', pool, 1);
        add('requested_bytes', pool, block.requested);
        if (block.allocated) {
          add('allocated_bytes', pool, block.size);
          add('allocation', pool, 1);
        }
      } else if (segment.blocks.length > 1) {
        add('inactive_split_bytes', pool, block.size);
        add('inactive_split', pool, 1);
      }
    }
  }
  return stats;
}
