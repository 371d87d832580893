/**
 * The multi-worker stress scenarios at length: under `pnpm fuzz` (ALLOT_FUZZ=1) four seeds per
 * worker count, 30× the operations and 5× the live blocks; otherwise one short round so
 * `pnpm test` stays quick.
 * Seeds start at FC_SEED when it is set; each test's title names its seed.
 */
import { describe, expect, it } from 'vitest';
import { ownBlocks, producerConsumer } from './stress-scenarios';
import { baseSeed, fuzzing } from './workers';

const ROUNDS = fuzzing ? 4 : 1;
const OPERATIONS = fuzzing ? 300_000 : 1500;
const MAX_LIVE = fuzzing ? 1000 : 200;
const WORKER_COUNTS = fuzzing ? [2, 4, 8] : [8];

describe.each(WORKER_COUNTS)('%i workers, long run', (workers) => {
  for (let round = 0; round < ROUNDS; round++) {
    const seed = baseSeed(0x7c0de) + 100 * round + workers;
    it(`own blocks, seed ${seed}`, async () => {
      const results = await ownBlocks(workers, seed, OPERATIONS, MAX_LIVE);
      expect(results.every((r) => r.checked > 0)).toBe(true);
    });
    it(`producer/consumer, seed ${seed}`, async () => {
      const results = await producerConsumer(workers, seed, OPERATIONS / 2, MAX_LIVE);
      expect(results).toHaveLength(workers);
    });
  }
});
