/**
 * allot's range strategies as the lab and the benchmarks build them: one table of recipes, with the
 * constants they share, so a row means the same thing in a lab table and in BENCHMARKS.md.
 *
 * Every strategy is built over a range of `capacity` bytes at base 0 with alignment 8 (where it
 * takes one), so high-water marks and timings compare across rows. The lab wraps each one into a row
 * (`analysis/registry.ts`: reserved memory, layouts, the caching pools beside them); the benchmarks add their
 * peers (`apps/bench/src/registry.ts`: AssemblyScript's TLSF, @thi.ng/malloc, bump).
 *
 * Published as `@allot/lab/strategies`, for a harness of your own that wants the same recipes.
 */
import { bestFit, goodFit, worstFit } from '@allot/best-fit';
import { buddy } from '@allot/buddy';
import { type Allocator, segregate } from '@allot/core';
import { firstFit } from '@allot/first-fit';
import { slab } from '@allot/slab';

/** The slab+best-fit hybrid's slab side: requests up to this size become slab objects. */
export const HYBRID_THRESHOLD = 256;
/** Bytes of one slab of the hybrid: a page, so a size class never strands more than a page. */
export const HYBRID_SLAB_SIZE = 4096;
/** Largest request the slab row serves: the largest of slab's default size classes. */
export const SLAB_MAX_REQUEST = 64 * 1024;

/**
 * Wraps the range a layered strategy takes its memory from (see {@link Strategy.layered}); the lab
 * passes one that tracks the range's high-water mark.
 */
export type RangeWrapper = (range: Allocator) => Allocator;

/** One strategy and how it is built. */
export interface Strategy {
  readonly name: string;
  /** The recipe, as code. */
  readonly recipe: string;
  /** What it does, in a phrase. */
  readonly summary: string;
  /**
   * Whether the lab's tables show it without `--allocators` (the benchmarks run every strategy).
   */
  readonly inLabTable: boolean;
  /**
   * Whether it hands out memory cut from an inner range (slabs), so the memory it reserves is the
   * inner range's high-water mark rather than that of the blocks it returns.
   */
  readonly layered: boolean;
  /** Largest request it serves, when it has a limit below its capacity. */
  readonly maxRequest?: number;
  /**
   * Bytes it may hold beyond its live blocks whatever the workload (slab: one slab of every size
   * class), for a default capacity that does not run out on a small trace.
   */
  readonly headroom?: number;
  /** Builds it over `capacity` bytes; `wrapRange` wraps the inner range of a layered strategy. */
  build(capacity: number, wrapRange?: RangeWrapper): Allocator;
}

const same: RangeWrapper = (range) => range;

/** Bytes of one slab of every default size class (slabs grow to hold at least four objects). */
function slabBytesPerClass(): number {
  // Nothing is taken from the upstream until the first allocation.
  const probe = slab({ upstream: buddy({ capacity: 2 ** 20 }) });
  return probe.classStats().reduce((sum, c) => sum + c.slabBytes, 0);
}

/** Every strategy, in table order. */
export const STRATEGIES: readonly Strategy[] = [
  {
    name: 'first-fit',
    recipe: 'firstFit({ capacity, alignment: 8 })',
    summary: 'lowest address that fits',
    inLabTable: true,
    layered: false,
    build: (capacity) => firstFit({ capacity, alignment: 8 }),
  },
  {
    name: 'next-fit',
    recipe: 'firstFit({ capacity, alignment: 8, nextFit: true })',
    summary: 'first fit from where the last search stopped',
    inLabTable: false,
    layered: false,
    build: (capacity) => firstFit({ capacity, alignment: 8, nextFit: true }),
  },
  {
    name: 'best-fit',
    recipe: 'bestFit({ capacity, alignment: 8 })',
    summary: 'smallest block that fits, lowest address on ties',
    inLabTable: true,
    layered: false,
    build: (capacity) => bestFit({ capacity, alignment: 8 }),
  },
  {
    name: 'good-fit',
    recipe: 'goodFit({ capacity, alignment: 8 })',
    summary: 'TLSF-style O(1) segregated fit',
    inLabTable: true,
    layered: false,
    build: (capacity) => goodFit({ capacity, alignment: 8 }),
  },
  {
    name: 'worst-fit',
    recipe: 'worstFit({ capacity, alignment: 8 })',
    summary: 'largest free block',
    inLabTable: false,
    layered: false,
    build: (capacity) => worstFit({ capacity, alignment: 8 }),
  },
  {
    name: 'buddy',
    recipe: 'buddy({ capacity })',
    summary: 'power-of-two blocks, split and merged with their buddy',
    inLabTable: true,
    layered: false,
    build: (capacity) => buddy({ capacity }),
  },
  {
    name: 'slab',
    recipe: 'slab({ upstream: buddy({ capacity }) })',
    summary: `default size classes over a buddy range; requests above ${SLAB_MAX_REQUEST / 1024} KiB fail`,
    inLabTable: false,
    layered: true,
    maxRequest: SLAB_MAX_REQUEST,
    headroom: slabBytesPerClass(),
    build: (capacity, wrapRange = same) => slab({ upstream: wrapRange(buddy({ capacity })) }),
  },
  {
    name: 'slab+best-fit',
    recipe:
      'range = bestFit({ capacity, alignment: 8 }); segregate({ threshold: 256 B, ' +
      'small: slab({ upstream: range, slabSize: 4 KiB }), large: range })',
    summary: 'slabs for small requests and large blocks share one best-fit range',
    inLabTable: true,
    layered: true,
    build: (capacity, wrapRange = same) => {
      const range = wrapRange(bestFit({ capacity, alignment: 8 }));
      return segregate({
        threshold: HYBRID_THRESHOLD,
        small: slab({ upstream: range, slabSize: HYBRID_SLAB_SIZE }),
        large: range,
      });
    },
  },
];

/** The strategy named `name`, or undefined. */
export function findStrategy(name: string): Strategy | undefined {
  return STRATEGIES.find((strategy) => strategy.name === name);
}
