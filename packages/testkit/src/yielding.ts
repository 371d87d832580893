/**
 * Property runs that let go of the event loop. `fc.assert` of a synchronous property holds the
 * loop from its first run to the end of shrinking: seconds for a model-based property, minutes
 * under `FC_NUM_RUNS=20000`. A vitest worker answers its runner only when the loop is free, so on
 * a busy machine such a stretch trips the runner's 60 s RPC timeout ("Timeout calling
 * onTaskUpdate") and fails the whole run although every property held.
 *
 * `yielding(property)` is the same property made asynchronous: it generates and shrinks exactly as
 * the original (one seed still replays one run, and a `path` still replays one counterexample),
 * and before a run it lets go of the loop (a `setImmediate`) when {@link YIELD_AFTER_MS} have
 * passed since it last did. Runs are never cut: a single run that takes longer holds the loop
 * for its length.
 */
import fc from 'fast-check';

/**
 * Longest time, in ms of the wall clock, between two moments the loop is let go. Shorter answers
 * the runner sooner and costs a turn of the loop (a few µs) more often.
 */
export const YIELD_AFTER_MS = 50;

// Taken when the module loads, so that a test's fake timers neither freeze nor swallow them.
const nextTurn: (callback: () => void) => void =
  typeof setImmediate === 'function' ? setImmediate : (callback) => setTimeout(callback, 0);
const now = performance.now.bind(performance);

let lastLetGo = now();

/**
 * Lets go of the event loop for one turn when {@link YIELD_AFTER_MS} have passed since the last
 * time; resolves at once otherwise. Call it (`await letGo()`) inside any long loop of a test.
 */
export function letGo(): Promise<void> {
  if (now() - lastLetGo < YIELD_AFTER_MS) return Promise.resolve();
  return new Promise((resolve) =>
    nextTurn(() => {
      lastLetGo = now();
      resolve();
    }),
  );
}

/**
 * `property` as an asynchronous property with the same runs, which lets go of the event loop
 * between runs (see {@link letGo}); its hooks run as before.
 */
export function yielding<Ts>(property: fc.IRawProperty<Ts>): fc.IAsyncProperty<Ts> {
  return {
    isAsync: () => true,
    generate: (random, runId) => property.generate(random, runId),
    shrink: (value) => property.shrink(value),
    run: async (value) => {
      await letGo();
      return property.run(value);
    },
    runBeforeEach: async () => {
      await property.runBeforeEach();
    },
    runAfterEach: async () => {
      await property.runAfterEach();
    },
  };
}

/**
 * `fc.assert(property, params)`, letting go of the event loop between runs (see
 * {@link yielding}): what a test runner's worker needs to keep answering.
 */
export function assertYielding<Ts>(
  property: fc.IRawProperty<Ts>,
  params?: fc.Parameters<Ts>,
): Promise<void> {
  return fc.assert(yielding(property), params);
}
