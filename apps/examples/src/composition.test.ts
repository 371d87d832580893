import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeConformance } from '@allot/testkit/vitest';
import { describe, expect, it } from 'vitest';
import { demo, makeHeap } from './composition';

describe('the README composition example', () => {
  it('runs and accounts for every block', () => {
    const heap = makeHeap();
    const big = heap.allocate(6 * 1024 * 1024, 256)!;
    const small = heap.allocate(48)!;
    expect(big % 256).toBe(0);
    expect(heap.upstream.large.owns(big)).toBe(true);
    expect(heap.upstream.small.owns(small)).toBe(true);
    expect(heap.totals().allocations.current).toBe(2);
    heap.free(small);
    heap.free(big);
    expect(heap.usage().liveCount).toBe(0);
    expect(heap.totals().allocations.peak).toBe(2);
    expect(demo()).toMatch(/Allocated memory/);
  });

  it('is quoted in the README word for word', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', '..', '..', 'README.md'), 'utf8');
    const source = readFileSync(join(import.meta.dirname, 'composition.ts'), 'utf8');
    const quoted =
      /<!-- example:composition -->\n```ts\n([\s\S]*?)```\n<!-- \/example:composition -->/.exec(
        readme,
      );
    expect(quoted, 'README has the marked example block').not.toBeNull();
    expect(quoted![1]).toBe(source);
  });
});

describeConformance({
  name: 'README composition',
  create: makeHeap,
  capabilities: {
    restoresInitialUsage: false,
    maxRequestSize: 256 * 1024,
    alignments: [1, 8, 256],
  },
});
