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
 * Browser-safe: no Node module.
 */

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

type Plain = { readonly [key: string]: unknown };

function isPlain(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function numberOf(value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'bigint') return Number(value);
  return 0;
}

/** PyTorch's small-pool segment size: a segment of 2 MiB without a type is a small one. */
const SMALL_SEGMENT = 2 ** 21;

/** The figures of `device` in a dump's `segments` (plain values, as the reader keeps them). */
export function dumpStats(segments: unknown, device: number): DumpStats {
  const stats = Object.fromEntries(
    STAT_FAMILIES.map((family) => [family, { all: 0, small_pool: 0, large_pool: 0 }]),
  ) as Record<StatFamily, Record<StatPool, number>>;
  const add = (family: StatFamily, pool: StatPool, value: number) => {
    stats[family].all += value;
    stats[family][pool] += value;
  };
  for (const segment of Array.isArray(segments) ? segments : []) {
    if (!isPlain(segment) || numberOf(segment.device) !== device) continue;
    const size = numberOf(segment.total_size);
    const type = segment.segment_type;
    const pool: StatPool =
      type === 'small' || (type !== 'large' && size === SMALL_SEGMENT)
        ? 'small_pool'
        : 'large_pool';
    add('reserved_bytes', pool, size);
    add('segment', pool, 1);
    const blocks = Array.isArray(segment.blocks) ? segment.blocks.filter(isPlain) : [];
    for (const block of blocks) {
      const bytes = numberOf(block.size);
      const state = typeof block.state === 'string' ? block.state : '';
      if (state.startsWith('active')) {
        add('active_bytes', pool, bytes);
        add('active', pool, 1);
        add('requested_bytes', pool, numberOf(block.requested_size));
        if (state === 'active_allocated') {
          add('allocated_bytes', pool, bytes);
          add('allocation', pool, 1);
        }
      } else if (blocks.length > 1) {
        add('inactive_split_bytes', pool, bytes);
        add('inactive_split', pool, 1);
      }
    }
  }
  return stats;
}
