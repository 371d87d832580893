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
import { inBatches } from './batches';
import { checkConformance, propertyParameters } from './check-conformance';
import { type CompactionCheckOptions, checkCompaction } from './compaction';
import type { ConformanceOptions } from './options';

/**
 * `checkConformance` in batches of {@link RUNS_PER_BATCH} runs, batch `i` seeded `seed + i` (or
 * fresh seeds when fuzzing without one), so a long run keeps the vitest worker answering; a run
 * with a replay path runs as it is.
 */
function checkInBatches<A extends Allocator>(
  options: ConformanceOptions<A>,
  property: 'model' | 'determinism',
): Promise<void> {
  return inBatches(propertyParameters(options), (batch) =>
    checkConformance(
      {
        ...options,
        ...(batch.numRuns === undefined ? {} : { numRuns: batch.numRuns }),
        ...(batch.seed === undefined ? {} : { seed: batch.seed }),
      },
      property,
    ),
  );
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

export { RUNS_PER_BATCH } from './batches';
export { checkConformance } from './check-conformance';
export { checkCompaction } from './compaction';
export type * from './options';
