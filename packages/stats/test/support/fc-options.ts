/** fast-check parameters from the environment: FC_NUM_RUNS, FC_SEED, FC_PATH (seeds are printed on failure). */
import type { Parameters } from 'fast-check';

export function fcOptions<T>(defaultRuns = 100): Parameters<T> {
  const runs = Number(
    process.env.FC_NUM_RUNS ?? (process.env.ALLOT_FUZZ === '1' ? 1000 : defaultRuns),
  );
  const seed = process.env.FC_SEED === undefined ? 0x5eed : Number(process.env.FC_SEED);
  return {
    numRuns: runs,
    seed,
    ...(process.env.FC_PATH ? { path: process.env.FC_PATH } : {}),
    verbose: 1,
  };
}
