/**
 * The loops of the raw workloads, as a user writes them: `allocate` and `free` called directly on
 * the allocator, the handles in one dense array. Nothing else runs between two calls but the read
 * of the next planned operation, the same for every row.
 *
 * Each row runs in a process of its own (`raw-worker.ts`), so the call sites here only ever see
 * that row's `allocate` and `free`.
 */
import type { BenchAllocator } from './bench-allocator';
import type { RandomPlan } from './raw-plan';

/** A handle slot whose allocation failed: nothing to free. */
const NO_BLOCK = -1;

/** Calls `free(allocate(size))` `pairs` times; returns the failed allocations. */
export function runPairs(allocator: BenchAllocator, size: number, pairs: number): number {
  let failures = 0;
  for (let i = 0; i < pairs; i++) {
    const address = allocator.allocate(size);
    if (address === null) failures++;
    else allocator.free(address);
  }
  return failures;
}

/**
 * The live blocks of a random workload: a dense array of handles (addresses, or {@link NO_BLOCK}
 * where an allocation failed) and how many are in use.
 */
export class Handles {
  readonly addresses: Float64Array;
  live = 0;
  failures = 0;

  constructor(capacity: number) {
    this.addresses = new Float64Array(capacity);
  }
}

/** Allocates every block of `sizes` into `handles`. */
export function fillHandles(
  allocator: BenchAllocator,
  sizes: Float64Array,
  handles: Handles,
): void {
  const addresses = handles.addresses;
  let live = handles.live;
  let failures = 0;
  for (let i = 0; i < sizes.length; i++) {
    const address = allocator.allocate(sizes[i]!);
    if (address === null) failures++;
    addresses[live++] = address ?? NO_BLOCK;
  }
  handles.live = live;
  handles.failures += failures;
}

/** Runs the planned operations (see {@link RandomPlan.operations}) against `handles`. */
export function runOperations(
  allocator: BenchAllocator,
  operations: Float64Array,
  handles: Handles,
): void {
  const addresses = handles.addresses;
  let live = handles.live;
  let failures = 0;
  for (let i = 0; i < operations.length; i++) {
    const operation = operations[i]!;
    if (operation > 0) {
      const address = allocator.allocate(operation);
      if (address === null) failures++;
      addresses[live++] = address ?? NO_BLOCK;
    } else {
      const slot = -operation - 1;
      const address = addresses[slot]!;
      if (address !== NO_BLOCK) allocator.free(address);
      addresses[slot] = addresses[--live]!;
    }
  }
  handles.live = live;
  handles.failures += failures;
}

/** Frees every live handle, leaving `handles` empty. */
export function freeHandles(allocator: BenchAllocator, handles: Handles): void {
  const addresses = handles.addresses;
  for (let i = 0; i < handles.live; i++) {
    const address = addresses[i]!;
    if (address !== NO_BLOCK) allocator.free(address);
  }
  handles.live = 0;
}

/** A plan's fill and operations against a fresh set of handles; returns them. */
export function runPlan(allocator: BenchAllocator, plan: RandomPlan): Handles {
  const handles = new Handles(plan.maxLive);
  fillHandles(allocator, plan.fill, handles);
  runOperations(allocator, plan.operations, handles);
  return handles;
}
