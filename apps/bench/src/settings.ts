/**
 * Run settings: repetitions and time budgets per (allocator, workload), for full and quick mode.
 * Budgets bound the slow rows (a linked-list allocator with 100,000 live blocks) without cutting
 * the fast ones short: a timed run stops at its deadline and reports ns/op over the events it did.
 */

/** Tunables of a run. */
export interface BenchSettings {
  readonly quick: boolean;
  /** Timed runs per (allocator, workload); the figure is their median. */
  readonly runs: number;
  /** Time spent replaying untimed before the timed runs (JIT warm-up), in ms. */
  readonly warmupMs: number;
  /** Time all timed runs of one (allocator, workload) may take together, in ms. */
  readonly timingBudgetMs: number;
  /** Time the capacity search of one (allocator, workload) may take, in ms. */
  readonly capacityBudgetMs: number;
  /** Relative precision of the capacity search (0.001 = 0.1 %). */
  readonly capacityPrecision: number;
}

/** Full run: 7 runs, ~5 s timing and 15 s search per cell at most. */
export const FULL_SETTINGS: BenchSettings = {
  quick: false,
  runs: 7,
  warmupMs: 300,
  timingBudgetMs: 4000,
  capacityBudgetMs: 15_000,
  capacityPrecision: 0.001,
};

/** Quick run: 3 runs and sub-second budgets; under a minute on two cores. */
export const QUICK_SETTINGS: BenchSettings = {
  quick: true,
  runs: 3,
  warmupMs: 60,
  timingBudgetMs: 450,
  capacityBudgetMs: 1000,
  capacityPrecision: 0.005,
};
