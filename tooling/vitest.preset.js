// The one vitest setup for every package. Property tests read FC_NUM_RUNS / FC_SEED themselves
// (see @allot/testkit); `pnpm fuzz` sets ALLOT_FUZZ=1, which lifts the time limit of a test, not
// the limit on holding the event loop: fuzz runs let go of it as often as shorter runs do.
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const fuzzing = process.env.ALLOT_FUZZ === '1';

// turbo runs one package's tests per core at once (`concurrency` in turbo.json), so each vitest
// takes a share of the cores rather than all but one of them: one worker up to 15 cores, two on
// 16, and so on. On 2 cores that is 2 workers in all, not the 10 that oversubscribed them.
const workers = Math.max(1, Math.floor(availableParallelism() / 8));

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    maxWorkers: workers,
    minWorkers: 1,
    testTimeout: fuzzing ? 0 : 120_000,
    hookTimeout: 120_000,
    // Fails a test that holds its worker's event loop for over ALLOT_LOOP_HOLD_LIMIT_MS of CPU
    // time (default 3 s) in one stretch: see loop-hold.js.
    setupFiles: [fileURLToPath(new URL('./loop-hold-guard.js', import.meta.url))],
  },
});
