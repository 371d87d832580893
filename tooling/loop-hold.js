/**
 * How long a test worker's event loop was held in one stretch, in the process's CPU time.
 *
 * A vitest worker answers its runner only when its event loop is free; a test that computes for a
 * minute without letting go (a long synchronous property run) trips the runner's 60 s RPC timeout,
 * "Timeout calling onTaskUpdate", and fails the whole run although every test passed. How long a
 * stretch takes on the wall clock depends on how busy the machine is; how much CPU it burns hardly
 * does. So the stretch is measured in CPU time (`process.cpuUsage`, all of the process's threads:
 * vitest's forks pool gives each test file a process of its own), and the limit holds on a quiet
 * laptop and a loaded CI runner alike.
 *
 * A timer marks every {@link TICK_MS}: it runs only when the loop is free, so the CPU burnt
 * between two marks bounds the longest stretch between them (plus at most a tick's worth of short
 * tasks). A synchronous wait (`spawnSync`, `Atomics.wait`) burns no CPU and is not seen: wait for a
 * child process with the asynchronous API.
 */

/**
 * Default limit on one stretch, in ms of CPU time: three times the longest stretch of any test
 * today (a lab replay of a real trace, about 1 s), so a slower CPU still passes; and 30 s on the
 * wall clock, half the RPC timeout, for a worker that gets a tenth of a core.
 */
export const DEFAULT_LIMIT_MS = 3000;

/** How often the loop is sampled, in ms; each sample costs one `process.cpuUsage` call. */
export const TICK_MS = 20;

/** The process's CPU time so far (user and system, every thread), in ms. */
export function processCpuMs() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * The guard's settings from the environment:
 * - `ALLOT_LOOP_HOLD_LIMIT_MS`: the longest a test may hold the loop, in ms of CPU time
 *   (default {@link DEFAULT_LIMIT_MS}); `0` turns the check off.
 * - `ALLOT_LOOP_HOLD_LOG`: a file to which every test's longest stretch is appended as
 *   `cpuMs<TAB>wallMs<TAB>test`, to find the tests that come near the limit.
 * @param {Record<string, string | undefined>} env
 * @returns {{ limitMs: number, log: string | undefined }}
 */
export function loopHoldSettings(env) {
  const raw = env.ALLOT_LOOP_HOLD_LIMIT_MS;
  const limitMs = raw === undefined || raw === '' ? DEFAULT_LIMIT_MS : Number(raw);
  if (!Number.isFinite(limitMs) || limitMs < 0) {
    throw new Error(
      `ALLOT_LOOP_HOLD_LIMIT_MS must be a number of ms (0 turns the check off), got ${JSON.stringify(raw)}`,
    );
  }
  const log = env.ALLOT_LOOP_HOLD_LOG === '' ? undefined : env.ALLOT_LOOP_HOLD_LOG;
  return { limitMs, log };
}

/** @typedef {{ cpuMs: number, wallMs: number }} Stretch */

/** The longer of two stretches by CPU time (`null` is shorter than any). */
export function longer(/** @type {Stretch | null} */ a, /** @type {Stretch | null} */ b) {
  if (a === null) return b;
  if (b === null) return a;
  return b.cpuMs > a.cpuMs ? b : a;
}

/**
 * The longest stretch between two marks. Call {@link LoopHoldMeter.mark} whenever the loop is
 * free (a timer), and {@link LoopHoldMeter.take} at the end of a test.
 */
export class LoopHoldMeter {
  #cpuNow;
  #wallNow;
  #lastCpu;
  #lastWall;
  /** @type {Stretch | null} */
  #longest = null;

  constructor(cpuNow = processCpuMs, wallNow = performance.now.bind(performance)) {
    this.#cpuNow = cpuNow;
    this.#wallNow = wallNow;
    this.#lastCpu = cpuNow();
    this.#lastWall = wallNow();
  }

  /** Ends the stretch since the last mark: the loop is free now. */
  mark() {
    const cpu = this.#cpuNow();
    const wall = this.#wallNow();
    this.#longest = longer(this.#longest, {
      cpuMs: cpu - this.#lastCpu,
      wallMs: wall - this.#lastWall,
    });
    this.#lastCpu = cpu;
    this.#lastWall = wall;
  }

  /** The longest stretch since the last take, the one running now included; starts afresh. */
  take() {
    this.mark();
    const longest = /** @type {Stretch} */ (this.#longest);
    this.#longest = null;
    return longest;
  }
}

const seconds = (/** @type {number} */ ms) => `${(ms / 1000).toFixed(1)} s`;

/** The message of a test that held the loop past the limit. */
export function holdMessage(
  /** @type {string} */ where,
  /** @type {Stretch} */ stretch,
  /** @type {number} */ limitMs,
) {
  return (
    `${where} held its worker's event loop for ${seconds(stretch.cpuMs)} of CPU time ` +
    `(${seconds(stretch.wallMs)} on the wall clock) in one stretch; the limit is ` +
    `${seconds(limitMs)} (ALLOT_LOOP_HOLD_LIMIT_MS). A worker answers vitest only when its loop is ` +
    'free, and on a busy machine such a stretch outlasts the 60 s RPC timeout ("Timeout calling ' +
    'onTaskUpdate"). Let go of the loop now and then: `assertYielding` or `yielding` from ' +
    '@allot/testkit for a property, `await letGo()` inside a long loop.'
  );
}
