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
import { checkConformanceAsync } from './check-conformance';
import { type CompactionCheckOptions, checkCompactionAsync } from './compaction';
import type { ConformanceOptions } from './options';

/**
 * One test per property. Each runs as `checkConformanceAsync`, which lets go of the event loop
 * every 50 ms or so, so a long run (`FC_NUM_RUNS=20000`) keeps the vitest worker answering.
 */
export function describeConformance<A extends Allocator>(options: ConformanceOptions<A>): void {
  describe(`${options.name}: Allocator contract`, () => {
    it('keeps every invariant under random commands (model-based)', () =>
      checkConformanceAsync(options, 'model'));
    if (options.capabilities?.deterministic !== false) {
      it('gives the same addresses for the same calls', () =>
        checkConformanceAsync(options, 'determinism'));
    }
  });
}

/** Compaction plans carried out on real bytes, as one vitest test. */
export function describeCompaction(options: CompactionCheckOptions): void {
  describe(`${options.name}: compaction plans`, () => {
    it('keeps every block’s bytes, respects limits, and ends with one free block', () =>
      checkCompactionAsync(options));
  });
}

export { RUNS_PER_BATCH } from './batches';
export { checkConformance, checkConformanceAsync } from './check-conformance';
export { checkCompaction, checkCompactionAsync } from './compaction';
export type * from './options';
export { assertYielding, letGo, YIELD_AFTER_MS, yielding } from './yielding';
