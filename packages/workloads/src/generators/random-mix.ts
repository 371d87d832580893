/**
 * Random mix: a heap that holds about `liveBlocks` blocks of log-uniform sizes while blocks are
 * freed at random and new ones allocated.
 *
 * Phases: first `liveBlocks` allocations fill the heap (event `steadyFrom` is the first one after);
 * then each of `operations` steps frees a uniformly chosen live block or allocates a new one. The
 * choice is biased toward the target, so the live count walks randomly within about ±`drift` of
 * `liveBlocks` instead of drifting away: with `live` blocks, the chance of allocating is
 * `0.5 + (liveBlocks − live) / (2 · drift · liveBlocks)`, clamped to [0, 1].
 *
 * Log-uniform sizes (as many 16–32 B requests as 32–64 KiB ones) are the classic stress for
 * free-block indexes: many small holes and a few large ones.
 */
import { Random } from '../random';
import { type Trace, TraceBuilder } from '../trace';
import { checkInteger, checkRange } from './check-options';

/** Options of {@link randomMix}. */
export interface RandomMixOptions {
  /** Target number of live blocks in the steady state. @defaultValue 10_000 */
  readonly liveBlocks?: number;
  /** Steady-state events after the fill. @defaultValue 200_000 */
  readonly operations?: number;
  /** Smallest request in bytes. @defaultValue 16 */
  readonly minSize?: number;
  /** Largest request in bytes. @defaultValue 65_536 */
  readonly maxSize?: number;
  /** Relative band the live count stays in (0.1 = ±10 %). @defaultValue 0.1 */
  readonly drift?: number;
  /** Alignment of each request, 0 for the allocator's default. @defaultValue 0 */
  readonly alignment?: number;
  /** PRNG seed. @defaultValue 1 */
  readonly seed?: number;
}

/** A seeded random mix; `meta.steadyFrom` marks where the steady state begins. */
export function randomMix(options: RandomMixOptions = {}): Trace {
  const {
    liveBlocks = 10_000,
    operations = 200_000,
    minSize = 16,
    maxSize = 65_536,
    drift = 0.1,
    alignment = 0,
    seed = 1,
  } = options;
  checkInteger('liveBlocks', liveBlocks, 1);
  checkInteger('operations', operations, 0);
  checkInteger('minSize', minSize, 1);
  checkInteger('maxSize', maxSize, 1);
  checkRange('minSize', minSize, 'maxSize', maxSize);
  if (!(drift > 0)) throw new RangeError(`drift must be > 0, got ${drift}`);

  const random = new Random(seed);
  const builder = new TraceBuilder('randomMix');
  // Live block ids in a dense array: remove by swapping with the last one (O(1)).
  const live = new Int32Array(Math.ceil(liveBlocks * (1 + drift)) + 2);
  let count = 0;
  for (let i = 0; i < liveBlocks; i++) {
    live[count++] = builder.alloc(random.logUniform(minSize, maxSize), alignment);
  }
  const steadyFrom = builder.length;
  const band = 2 * drift * liveBlocks;
  for (let i = 0; i < operations; i++) {
    let pAlloc = 0.5 + (liveBlocks - count) / band;
    if (count === 0) pAlloc = 1;
    if (count === live.length) pAlloc = 0;
    if (random.next() < pAlloc) {
      live[count++] = builder.alloc(random.logUniform(minSize, maxSize), alignment);
    } else {
      const slot = random.index(count);
      builder.free(live[slot]!);
      live[slot] = live[--count]!;
    }
  }
  return builder.build(`random-mix-${liveBlocks}`, {
    generator: 'randomMix',
    liveBlocks,
    operations,
    minSize,
    maxSize,
    drift,
    alignment,
    seed,
    steadyFrom,
  });
}
