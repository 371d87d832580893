/**
 * Hybrids composed in application code, the point of allot: each is an allocator in its own right,
 * so it runs through the shared conformance suite like any strategy, and the tests below show how
 * requests are routed and where each block goes back.
 *
 * 1. `segregate`: requests up to 64 KiB go to slab object caches whose slabs come from a buddy heap;
 *    larger ones go to best fit over a range of their own.
 * 2. `fallback`: the slab serves what it can; a request above its largest class, or one it cannot
 *    serve because its upstream is exhausted, goes to best fit.
 */
import { bestFit } from '@allot/best-fit';
import { buddy } from '@allot/buddy';
import { fallback, segregate } from '@allot/core';
import { describeConformance } from '@allot/testkit/vitest';
import { describe, expect, it } from 'vitest';
import { slab } from './slab';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Small requests: slabs from a buddy heap at 2^40. Large ones: best fit at 2^41. */
function segregatedHeap() {
  return segregate({
    threshold: 64 * KiB,
    small: slab({ upstream: buddy({ capacity: 64 * MiB, base: 2 ** 40, minBlockSize: 4 * KiB }) }),
    large: bestFit({ capacity: 256 * MiB, base: 2 ** 41 }),
  });
}

/** The slab first (over a small buddy heap), best fit when it returns null. */
function fallbackHeap() {
  return fallback(
    slab({ upstream: buddy({ capacity: 1 * MiB, base: 2 ** 40, minBlockSize: 4 * KiB }) }),
    bestFit({ capacity: 64 * MiB, base: 2 ** 41 }),
  );
}

// A slab's layout lists every object of every slab it holds, and the suite reads the layout after
// each command: 40 commands a run keeps these suites to seconds.
const hybridCapabilities = {
  coalesces: false,
  complete: false,
  restoresInitialUsage: false,
  alignments: [1, 8, 64, 256],
  maxCommands: 40,
} as const;

describeConformance({
  name: 'segregate(slab over buddy, best fit)',
  create: segregatedHeap,
  capabilities: { ...hybridCapabilities, maxRequestSize: 256 * KiB },
});

describeConformance({
  name: 'fallback(slab over buddy, best fit)',
  create: fallbackHeap,
  capabilities: { ...hybridCapabilities, maxRequestSize: 128 * KiB },
});

describe('hybrids', () => {
  it('segregate: small requests to slab objects, large ones to best fit', () => {
    const heap = segregatedHeap();
    const small = heap.allocate(100)!; // a 112-byte slab object
    const edge = heap.allocate(64 * KiB)!; // still small: the largest class
    const large = heap.allocate(64 * KiB + 1)!; // best fit
    expect(heap.small.owns(small)).toBe(true);
    expect(heap.small.owns(edge)).toBe(true);
    expect(heap.large.owns(large)).toBe(true);
    expect(heap.usableSize(small)).toBe(112);
    expect(small).toBeLessThan(2 ** 41);
    expect(large).toBeGreaterThanOrEqual(2 ** 41);
    // The slab's figures say where small memory went; the layout labels each side.
    const stats = heap.small.classStats().filter((s) => s.liveObjects > 0);
    expect(stats.map((s) => [s.size, s.liveObjects])).toEqual([
      [112, 1],
      [64 * KiB, 1],
    ]);
    const pools = new Set(heap.layout!().segments.map((s) => s.pool));
    expect(pools).toEqual(new Set(['small/112 B', 'small/65536 B', 'large']));
    heap.free(small);
    heap.free(edge);
    heap.free(large);
    expect(heap.usage().liveCount).toBe(0);
    // Empty slabs stay cached (one per class by default) in the buddy heap under the slab.
    expect(heap.small.upstream.usage().liveCount).toBe(2);
  });

  it('fallback: best fit takes what the slab cannot serve', () => {
    const heap = fallbackHeap();
    const small = heap.allocate(48)!;
    expect(heap.primary.owns(small)).toBe(true);
    // Above the slab's largest class (64 KiB): best fit.
    const big = heap.allocate(100 * KiB)!;
    expect(heap.secondary.owns(big)).toBe(true);
    // The slab's 1 MiB buddy heap holds the 64 KiB slab of 48-byte objects and three 256 KiB
    // slabs of four 64 KiB objects each; the 13th 64 KiB object goes to best fit.
    const objects: number[] = [];
    for (let i = 0; i < 12; i++) objects.push(heap.allocate(64 * KiB)!);
    expect(objects.every((a) => heap.primary.owns(a))).toBe(true);
    const overflow = heap.allocate(64 * KiB)!;
    expect(heap.secondary.owns(overflow)).toBe(true);
    for (const address of [small, big, overflow, ...objects]) heap.free(address);
    expect(heap.usage().liveCount).toBe(0);
  });
});
