/**
 * Larson-style server churn (after Larson & Krishnan's benchmark of long-running servers): several
 * simulated threads each own an array of slots holding small blocks; at each step a random thread
 * picks a random slot, frees its block and allocates a new one of random size. Every
 * `roundsPerThread` steps of a thread, the thread is replaced by a new one that inherits its slots,
 * as in the original (which matters for per-thread caches: the heir frees what its predecessor
 * allocated). In a single trace the threads interleave; `meta.threads` records how many there were.
 *
 * Sizes are uniform in [minSize, maxSize], as in the benchmark (not log-uniform).
 */
import { Random } from '../random';
import { type Trace, TraceBuilder } from '../trace';
import { checkInteger, checkRange } from './check-options';

/** Options of {@link larson}. */
export interface LarsonOptions {
  /** Simulated threads. @defaultValue 4 */
  readonly threads?: number;
  /** Slots (live blocks) per thread. @defaultValue 1000 */
  readonly blocksPerThread?: number;
  /** Free+allocate steps in total, after the fill. @defaultValue 50_000 */
  readonly operations?: number;
  /** Steps a thread takes before an heir replaces it. @defaultValue 10_000 */
  readonly roundsPerThread?: number;
  /** Smallest request in bytes. @defaultValue 16 */
  readonly minSize?: number;
  /** Largest request in bytes. @defaultValue 512 */
  readonly maxSize?: number;
  /** PRNG seed. @defaultValue 1 */
  readonly seed?: number;
}

/** A seeded larson-style churn; `meta.steadyFrom` marks the end of the fill. */
export function larson(options: LarsonOptions = {}): Trace {
  const {
    threads = 4,
    blocksPerThread = 1000,
    operations = 50_000,
    roundsPerThread = 10_000,
    minSize = 16,
    maxSize = 512,
    seed = 1,
  } = options;
  checkInteger('threads', threads, 1);
  checkInteger('blocksPerThread', blocksPerThread, 1);
  checkInteger('operations', operations, 0);
  checkInteger('roundsPerThread', roundsPerThread, 1);
  checkInteger('minSize', minSize, 1);
  checkInteger('maxSize', maxSize, 1);
  checkRange('minSize', minSize, 'maxSize', maxSize);

  const random = new Random(seed);
  const builder = new TraceBuilder('larson');
  const slots = new Int32Array(threads * blocksPerThread);
  for (let i = 0; i < slots.length; i++) slots[i] = builder.alloc(random.integer(minSize, maxSize));
  const steadyFrom = builder.length;
  const rounds = new Int32Array(threads);
  let generations = threads;
  for (let i = 0; i < operations; i++) {
    const thread = random.index(threads);
    const slot = thread * blocksPerThread + random.index(blocksPerThread);
    builder.free(slots[slot]!);
    slots[slot] = builder.alloc(random.integer(minSize, maxSize));
    if (++rounds[thread]! === roundsPerThread) {
      rounds[thread] = 0;
      generations++;
    }
  }
  return builder.build(`larson-${threads}x${blocksPerThread}`, {
    generator: 'larson',
    threads,
    blocksPerThread,
    operations,
    roundsPerThread,
    threadGenerations: generations,
    minSize,
    maxSize,
    seed,
    steadyFrom,
  });
}
