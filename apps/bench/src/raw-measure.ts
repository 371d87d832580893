/**
 * Timing one row on one raw workload, inside its worker process (see `raw-worker.ts`).
 *
 * One allocator, built once: {@link WARMUP_PASSES} ({@link PAIRS_WARMUP_PASSES} for pairs) whole
 * untimed passes of the workload warm the compiler up, each followed by emptying the allocator
 * (`reset()` where the row has it; otherwise every live block freed, and a bump allocator
 * rewound); a collection runs, then the fill is replayed untimed and the operations
 * are timed in the process's CPU time (user + system), so time spent descheduled on a shared
 * machine does not count. Reusing the instance keeps the compiled code valid: a fresh one after a
 * collection would free the objects the optimiser embedded in it.
 */
import type { BenchAllocator } from './bench-allocator';
import { collectGarbage, cpuTimeNs } from './measure';
import type { RawMeasurement } from './protocol';
import { fillHandles, freeHandles, Handles, runOperations, runPairs, runPlan } from './raw-loop';
import { planRandom, RAW_MAX_SIZE, type RawWorkload } from './raw-plan';
import type { WorkloadProfile } from './registry';

/** What measuring needs: the row's factory and the capacity it gets. */
export interface RawRow {
  readonly name: string;
  readonly factory: (capacity: number, profile: WorkloadProfile) => BenchAllocator;
  /** Capacity for `profile` when the row does not take the arena. */
  readonly capacity?: (profile: WorkloadProfile) => number;
}

/**
 * Untimed passes before the timed one. One is not enough: V8 compiles in background threads whose
 * CPU time the process's figure includes, and the code it installs after the first pass is faster
 * still (good fit measured 17.5 ns per call on pairs-64 after one pass, 13.4 after three; 85–92 and
 * 70–72 on random-5k). Three reach the steady state every row is compared in.
 */
export const WARMUP_PASSES = 3;

/**
 * Untimed passes before a pairs workload's timed one. Its timed pass lasts 2–3 ms for the fastest
 * rows, so a compilation that lands in it (about 1 ms of CPU time for the loop) weighs as much as
 * the calls. A row whose pair takes a shorter path than the first call after `reset()` meets that
 * path once per pass, and three passes left V8 recompiling its loop during the timed pass in about
 * half the processes (slab: 2.1 against 1.4 ns per call); five do not. A pass is a few milliseconds.
 */
export const PAIRS_WARMUP_PASSES = 5;

/** Bytes of the arena of the pairs workload (the random mix's, for the same memory behind it). */
export const PAIRS_ARENA = 64 * 2 ** 20;

/** Empties `allocator` after a pass whose live blocks are `handles` (null: none). */
function empty(allocator: BenchAllocator, handles: Handles | null): void {
  if (allocator.reset) {
    allocator.reset();
    return;
  }
  if (handles) freeHandles(allocator, handles);
  allocator.rewind?.();
}

/** Times `row` on `workload`; the random plans come from `seed`. */
export function measureRaw(row: RawRow, workload: RawWorkload, seed: number): RawMeasurement {
  if (workload.kind === 'pairs') {
    const profile: WorkloadProfile = {
      peakLiveBytes: workload.size,
      totalAllocatedBytes: workload.size * workload.pairs,
      allocs: workload.pairs,
      maxSize: workload.size,
    };
    const capacity = row.capacity?.(profile) ?? PAIRS_ARENA;
    const allocator = row.factory(capacity, profile);
    for (let pass = 0; pass < PAIRS_WARMUP_PASSES; pass++) {
      runPairs(allocator, workload.size, workload.pairs);
      empty(allocator, null);
    }
    collectGarbage();
    const wall = performance.now();
    const cpu = cpuTimeNs();
    const failures = runPairs(allocator, workload.size, workload.pairs);
    return {
      allocator: row.name,
      workload: workload.id,
      cpuNs: cpuTimeNs() - cpu,
      wallNs: (performance.now() - wall) * 1e6,
      calls: 2 * workload.pairs - failures,
      failures,
      capacity,
    };
  }
  const plan = planRandom(workload, seed);
  const profile: WorkloadProfile = {
    peakLiveBytes: plan.fillBytes,
    totalAllocatedBytes: plan.requestedBytes,
    allocs: plan.allocations,
    maxSize: RAW_MAX_SIZE,
  };
  const capacity = row.capacity?.(profile) ?? workload.arenaBytes;
  const allocator = row.factory(capacity, profile);
  for (let pass = 0; pass < WARMUP_PASSES; pass++) empty(allocator, runPlan(allocator, plan));
  collectGarbage();
  const handles = new Handles(plan.maxLive);
  fillHandles(allocator, plan.fill, handles);
  const wall = performance.now();
  const cpu = cpuTimeNs();
  runOperations(allocator, plan.operations, handles);
  const cpuNs = cpuTimeNs() - cpu;
  const wallNs = (performance.now() - wall) * 1e6;
  empty(allocator, handles);
  return {
    allocator: row.name,
    workload: workload.id,
    cpuNs,
    wallNs,
    calls: plan.operations.length,
    failures: handles.failures,
    capacity,
  };
}
