/**
 * The conformance suite as vitest tests: one call per strategy, one test per property.
 *
 * ```ts
 * describeConformance({ name: 'best-fit', create: () => bestFit({ capacity: 1 << 16 }),
 *   capabilities: { coalesces: true, complete: true, placement: 'best-fit' } });
 * ```
 */
import type { Allocator } from '@allot/core';
import { describe, it } from 'vitest';
import { checkConformance, propertyParameters } from './check-conformance';
import { type CompactionCheckOptions, checkCompaction } from './compaction';
import type { ConformanceOptions } from './options';

/**
 * Runs per batch of a long property run. The event loop is let go between batches: vitest's worker
 * answers its runner only then, and one synchronous body of over 60 s (20,000 fuzzing runs) trips
 * its RPC timeout and fails the run although every property held.
 */
export const RUNS_PER_BATCH = 500;

/**
 * `checkConformance` in batches of {@link RUNS_PER_BATCH} runs, batch `i` seeded `seed + i` (or
 * fresh seeds when fuzzing without one); a run with a replay path runs as it is.
 */
async function checkInBatches<A extends Allocator>(
  options: ConformanceOptions<A>,
  property: 'model' | 'determinism',
): Promise<void> {
  const params = propertyParameters(options);
  const total = params.numRuns ?? 100;
  if (total <= RUNS_PER_BATCH || params.path !== undefined) {
    checkConformance(options, property);
    return;
  }
  for (let done = 0, batch = 0; done < total; done += RUNS_PER_BATCH, batch++) {
    checkConformance(
      {
        ...options,
        numRuns: Math.min(RUNS_PER_BATCH, total - done),
        ...(params.seed === undefined ? {} : { seed: params.seed + batch }),
      },
      property,
    );
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export function describeConformance<A extends Allocator>(options: ConformanceOptions<A>): void {
  describe(`${options.name}: Allocator contract`, () => {
    it('keeps every invariant under random commands (model-based)', () =>
      checkInBatches(options, 'model'));
    if (options.capabilities?.deterministic !== false) {
      it('gives the same addresses for the same calls', () =>
        checkInBatches(options, 'determinism'));
    }
  });
}

/** Compaction plans carried out on real bytes, as one vitest test. */
export function describeCompaction(options: CompactionCheckOptions): void {
  describe(`${options.name}: compaction plans`, () => {
    it('keeps every block’s bytes, respects limits, and ends with one free block', () => {
      checkCompaction(options);
    });
  });
}

export { checkConformance } from './check-conformance';
export { checkCompaction } from './compaction';
export type * from './options';
