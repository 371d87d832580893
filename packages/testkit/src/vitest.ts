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

export { checkConformance } from './check-conformance';
export type * from './options';
