/**
 * Long property runs in batches. `FC_NUM_RUNS=20000` makes one `fc.assert` run synchronously for
 * minutes; vitest's worker answers its runner only when the event loop is free, and a body of over
 * 60 s trips its RPC timeout ("Timeout calling onTaskUpdate") and fails the run although every
 * property held. Between batches the event loop is let go.
 *
 * Superseded by `assertYielding` (yielding.ts), which lets go every 50 ms whatever the number of
 * runs, and keeps one seed for the whole run: a run of 100 that takes seconds holds the loop for
 * all of them here.
 */
import fc from 'fast-check';

/** Runs per batch of a long property run. */
export const RUNS_PER_BATCH = 500;

/** The parameters of each batch of a run of `numRuns`: batch `i` seeded `seed + i` when seeded. */
export function batchParameters<P extends { numRuns?: number; seed?: number; path?: string }>(
  params: P,
): P[] {
  const total = params.numRuns ?? 100;
  if (total <= RUNS_PER_BATCH || params.path !== undefined) return [params];
  const batches: P[] = [];
  for (let done = 0, batch = 0; done < total; done += RUNS_PER_BATCH, batch++) {
    batches.push({
      ...params,
      numRuns: Math.min(RUNS_PER_BATCH, total - done),
      ...(params.seed === undefined ? {} : { seed: params.seed + batch }),
    });
  }
  return batches;
}

/** Calls `run` with each batch's parameters (see {@link batchParameters}), yielding in between. */
export async function inBatches<P extends { numRuns?: number; seed?: number; path?: string }>(
  params: P,
  run: (batch: P) => void,
): Promise<void> {
  const batches = batchParameters(params);
  for (let i = 0; i < batches.length; i++) {
    run(batches[i]!);
    if (i + 1 < batches.length) await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * `fc.assert(property, params)` in batches of {@link RUNS_PER_BATCH} runs, so a long fuzzing run
 * keeps a vitest worker answering. A run with a replay `path` runs whole.
 * @deprecated Use `assertYielding(property, params)`: it lets go of the loop every 50 ms, also
 * in runs of fewer than {@link RUNS_PER_BATCH}.
 */
export function assertInBatches<Ts>(
  property: fc.IProperty<Ts>,
  params: fc.Parameters<Ts> = {},
): Promise<void> {
  return inBatches(params, (batch) => fc.assert(property, batch));
}
