/**
 * Run settings: repetitions and time budgets per (allocator, workload), for full and quick mode.
 * Budgets bound the slow rows (a linked-list allocator with 100,000 live blocks) without cutting
 * the fast ones short: a timed run stops at its deadline and reports ns/op over the events it did.
 */

/** Tunables of a run. */
export interface BenchSettings {
  readonly quick: boolean;
  /** Timed runs per (allocator, workload) in each worker process; a process's figure is their median. */
  readonly runs: number;
  /**
   * Worker processes per allocator; the figure is the median of their figures. Each process gets
   * its own compiled code, which on a busy machine lands faster or slower from one process to the
   * next; the capacity search runs in the first process only.
   */
  readonly processes: number;
  /** Time spent replaying untimed before the timed runs (JIT warm-up), in ms. */
  readonly warmupMs: number;
  /** Time all timed runs of one (allocator, workload) may take together, in ms. */
  readonly timingBudgetMs: number;
  /** Time the capacity search of one (allocator, workload) may take, in ms. */
  readonly capacityBudgetMs: number;
  /** Relative precision of the capacity search (0.001 = 0.1 %). */
  readonly capacityPrecision: number;
}

/** Full run: 3 processes of 7 runs, ~5 s timing per process and 15 s search per cell at most. */
export const FULL_SETTINGS: BenchSettings = {
  quick: false,
  runs: 7,
  processes: 3,
  warmupMs: 300,
  timingBudgetMs: 4000,
  capacityBudgetMs: 15_000,
  capacityPrecision: 0.001,
};

/** Quick run: 3 runs and sub-second budgets; under a minute on two cores. */
export const QUICK_SETTINGS: BenchSettings = {
  quick: true,
  runs: 3,
  processes: 1,
  warmupMs: 60,
  timingBudgetMs: 450,
  capacityBudgetMs: 1000,
  capacityPrecision: 0.005,
};
