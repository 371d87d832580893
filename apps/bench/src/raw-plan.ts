/**
 * The raw workloads: what a user's own loop asks of an allocator, with no replay machinery between
 * the loop and `allocate`/`free`.
 *
 * - **pairs-64**: `free(allocate(64))`, 10^6 times.
 * - **random-5k**: an arena of 64 MiB filled with 5,000 blocks of log-uniform sizes from 16 B to
 *   64 KiB (about 40 MB live: the arena is about 60 % full), then 10^6 operations, each an
 *   allocation of a new log-uniform size or a free of a uniformly chosen live block. The choice is
 *   biased toward the target so the live count stays within ±5 % of 5,000: with `live` blocks the
 *   chance of allocating is `0.5 + (target − live) / (2 · 0.05 · target)`, clamped to [0, 1].
 * - **random-100k**: the same with 100,000 live blocks in an arena 20 times larger (the same 60 %),
 *   for the growth from 5,000 to 100,000 live blocks.
 *
 * A plan is seeded and built before the clock starts: the fill's sizes, and one number per
 * operation (a size to allocate when positive; `−(slot + 1)` to free the handle in `slot`, where the
 * loop keeps its handles in one dense array and fills a freed slot with the last handle). Every row
 * runs the same operations whatever it returns, so the figures compare.
 */
import { Random } from '@allot/workloads';

/** Smallest and largest request of the random workloads, in bytes. */
export const RAW_MIN_SIZE = 16;
export const RAW_MAX_SIZE = 64 * 1024;
/** The live count stays within this share of the target (±5 %). */
export const RAW_DRIFT = 0.05;
/** Arena bytes per 5,000 live blocks: 64 MiB, about 60 % full with log-uniform 16 B–64 KiB. */
const ARENA_PER_5K = 64 * 2 ** 20;

/** One raw workload, serialisable (it crosses the process boundary). */
export type RawWorkload =
  | {
      readonly id: string;
      readonly title: string;
      readonly kind: 'pairs';
      /** Bytes per request. */
      readonly size: number;
      /** Timed pairs (each warm-up pass runs as many). */
      readonly pairs: number;
    }
  | {
      readonly id: string;
      readonly title: string;
      readonly kind: 'random';
      /** Blocks filled before the clock starts, and the live count the operations keep. */
      readonly liveBlocks: number;
      /** Timed operations (allocations and frees). */
      readonly operations: number;
      /** Bytes of the arena each allot row and the wasm TLSF manage. */
      readonly arenaBytes: number;
    };

function random(liveBlocks: number, operations: number): RawWorkload {
  return {
    id: `random-${liveBlocks >= 1000 ? `${liveBlocks / 1000}k` : liveBlocks}`,
    title:
      `Raw random mix, ${liveBlocks.toLocaleString('en-US')} live blocks ` +
      `(16 B–64 KiB log-uniform, ${(liveBlocks / 5000) * 64} MiB arena)`,
    kind: 'random',
    liveBlocks,
    operations,
    arenaBytes: (liveBlocks / 5000) * ARENA_PER_5K,
  };
}

/** The raw workloads, in table order; `quick` shrinks the operation counts tenfold. */
export function rawWorkloads(quick = false): RawWorkload[] {
  const scale = quick ? 0.1 : 1;
  return [
    {
      id: 'pairs-64',
      title: 'Raw same-size pairs, 64 B',
      kind: 'pairs',
      size: 64,
      pairs: 1_000_000 * scale,
    },
    random(5000, 1_000_000 * scale),
    random(100_000, 1_000_000 * scale),
  ];
}

/** The operations of a random workload, built before timing. */
export interface RandomPlan {
  /** Sizes of the blocks the arena is filled with, in bytes. */
  readonly fill: Float64Array;
  /** Per operation: a size to allocate (> 0), or `−(slot + 1)` to free the handle in `slot`. */
  readonly operations: Float64Array;
  /** Most handles live at once: the length the loop's handle array needs. */
  readonly maxLive: number;
  /** Bytes requested by the fill (the live bytes when the clock starts). */
  readonly fillBytes: number;
  /** Bytes requested by the fill and every allocation of the operations. */
  readonly requestedBytes: number;
  /** Allocations, fill included. */
  readonly allocations: number;
}

/** Builds the seeded operations of `workload` (a random one). */
export function planRandom(
  workload: Extract<RawWorkload, { kind: 'random' }>,
  seed: number,
): RandomPlan {
  const { liveBlocks, operations: count } = workload;
  const generator = new Random(seed);
  const fill = new Float64Array(liveBlocks);
  let requestedBytes = 0;
  for (let i = 0; i < liveBlocks; i++) {
    fill[i] = generator.logUniform(RAW_MIN_SIZE, RAW_MAX_SIZE);
    requestedBytes += fill[i]!;
  }
  const fillBytes = requestedBytes;
  const operations = new Float64Array(count);
  const band = 2 * RAW_DRIFT * liveBlocks;
  let live = liveBlocks;
  let maxLive = live;
  let allocations = liveBlocks;
  for (let i = 0; i < count; i++) {
    const chance = 0.5 + (liveBlocks - live) / band;
    if (live === 0 || generator.next() < chance) {
      const size = generator.logUniform(RAW_MIN_SIZE, RAW_MAX_SIZE);
      operations[i] = size;
      requestedBytes += size;
      allocations++;
      live++;
      if (live > maxLive) maxLive = live;
    } else {
      operations[i] = -(generator.index(live) + 1);
      live--;
    }
  }
  return { fill, operations, maxLive, fillBytes, requestedBytes, allocations };
}
