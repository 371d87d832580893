/**
 * Failure injection for adaptors, after Zig's FailingAllocator: fail the N-th allocation (and, if
 * sticky, every one after it), then run the same scenario again with N = 0, 1, 2, ... until a run
 * finishes without reaching N. Every upstream failure path of an adaptor gets exercised.
 */
import type { Allocator, Layout, MemorySource, Region } from '@allot/core';

/** Which call fails. Filled in by the wrappers so the driver knows whether the plan was reached. */
export interface FailurePlan {
  /** Zero-based index of the first call to fail. */
  readonly failAt: number;
  /** Fail every call from `failAt` on, not only that one. */
  readonly sticky: boolean;
  /** Calls seen so far. */
  calls: number;
  /** Failures injected so far. */
  injected: number;
}

export function failurePlan(failAt: number, sticky = false): FailurePlan {
  return { failAt, sticky, calls: 0, injected: 0 };
}

function shouldFail(plan: FailurePlan): boolean {
  const index = plan.calls++;
  const failNow = plan.sticky ? index >= plan.failAt : index === plan.failAt;
  if (failNow) plan.injected++;
  return failNow;
}

/** An allocator that returns `null` where `plan` says, and otherwise passes through to `upstream`. */
export function failingAllocator<A extends Allocator>(
  upstream: A,
  plan: FailurePlan,
): Allocator & { readonly upstream: A } {
  const wrapped: Allocator & { readonly upstream: A } = {
    upstream,
    alignment: upstream.alignment,
    allocate: (size, alignment) => (shouldFail(plan) ? null : upstream.allocate(size, alignment)),
    free: (address) => upstream.free(address),
    usableSize: (address) => upstream.usableSize(address),
    owns: (address) => upstream.owns(address),
    usage: () => upstream.usage(),
    reset: () => upstream.reset(),
  };
  if (upstream.layout) {
    const layout = upstream.layout.bind(upstream);
    return Object.assign(wrapped, { layout: (): Layout => layout() });
  }
  return wrapped;
}

/** A memory source whose `acquire` returns `null` where `plan` says. */
export function failingSource<R extends Region>(
  source: MemorySource<R>,
  plan: FailurePlan,
): MemorySource<R> {
  return {
    kind: source.kind,
    granularity: source.granularity,
    hostAccessible: source.hostAccessible,
    acquire: (size) => (shouldFail(plan) ? null : source.acquire(size)),
    release: (region) => source.release(region),
    reservedBytes: () => source.reservedBytes(),
    ...(source.grow ? { grow: source.grow.bind(source) } : {}),
    ...(source.view ? { view: source.view.bind(source) } : {}),
  };
}

/**
 * Runs `scenario` with a failure at call 0, then 1, 2, ... until a run ends without reaching its
 * failure point; returns how many runs it made.
 * @throws when `max` runs were not enough (the scenario keeps allocating).
 */
export function forEachFailurePoint(
  scenario: (plan: FailurePlan) => void,
  options: { readonly sticky?: boolean; readonly max?: number } = {},
): number {
  const max = options.max ?? 10_000;
  for (let failAt = 0; failAt < max; failAt++) {
    const plan = failurePlan(failAt, options.sticky ?? false);
    scenario(plan);
    if (plan.injected === 0) return failAt + 1;
  }
  throw new Error(
    `forEachFailurePoint: the scenario still reached its failure point after ${max} runs`,
  );
}
