/**
 * Multi-worker stress, seeded: 2, 4 and 8 workers on one shared heap, each with its own cache.
 * Every byte of every block carries its worker's id and a sequence number and is verified before
 * the block is freed; at the end the heap equals its initial state. `stress.prop.test.ts` runs the
 * same scenarios longer under `pnpm fuzz`.
 */
import { describe, expect, it } from 'vitest';
import { ownBlocks, producerConsumer } from './stress-scenarios';
import { baseSeed } from './workers';

const OPERATIONS = 10_000;

describe.each([2, 4, 8])('%i workers', (workers) => {
  it('allocate, fill, verify and free in random order; the heap returns to its initial state', async () => {
    const results = await ownBlocks(workers, baseSeed(1000 * workers), OPERATIONS);
    expect(results).toHaveLength(workers);
    for (const r of results) expect(r.checked).toBeGreaterThan(0);
  });

  it('producer/consumer: blocks freed in another worker; the heap returns to its initial state', async () => {
    const results = await producerConsumer(workers, baseSeed(2000 * workers), OPERATIONS / 2);
    expect(results).toHaveLength(workers);
  });
});
