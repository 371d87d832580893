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
import { checkConformance } from './check-conformance';
import { type CompactionCheckOptions, checkCompaction } from './compaction';
import type { ConformanceOptions } from './options';

export function describeConformance<A extends Allocator>(options: ConformanceOptions<A>): void {
  describe(`${options.name}: Allocator contract`, () => {
    it('keeps every invariant under random commands (model-based)', () => {
      checkConformance(options, 'model');
    });
    if (options.capabilities?.deterministic !== false) {
      it('gives the same addresses for the same calls', () => {
        checkConformance(options, 'determinism');
      });
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
