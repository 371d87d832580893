// The one vitest setup for every package. Property tests read FC_NUM_RUNS / FC_SEED themselves
// (see @allot/testkit); `pnpm fuzz` sets ALLOT_FUZZ=1, which lifts the time limit.
import { defineConfig } from 'vitest/config';

const fuzzing = process.env.ALLOT_FUZZ === '1';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    testTimeout: fuzzing ? 0 : 120_000,
    hookTimeout: 120_000,
  },
});
