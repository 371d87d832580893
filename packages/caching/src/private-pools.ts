/**
 * Private pools (`torch.cuda.MemPool` and `use_mem_pool`): allocations made inside a scope go to
 * segments of their own owner, with statistics of their own. Frees always go back to the block's
 * own pool. A released private pool takes no more allocations; its unused segments go back to the
 * source at once and the others as soon as their last block is freed.
 */
import { InvalidArgumentError, type Layout, type Usage } from '@allot/core';
import type { MemoryStats, PoolStatsReport } from '@allot/stats';
import { settleParked } from './parked-free';
import { processEvents } from './pending-frees';
import type { PoolCore } from './pool-core';
import { PoolCounters } from './pool-counters';
import { PoolOwner } from './pool-owner';
import { layoutOf, memoryStatsOf, poolStatsOf, usageOf } from './pool-report';
import { releaseUnusedOf } from './segments';

/** A scope that routes allocations to a private pool until disposed (`using scope = ...`). */
export interface PrivatePoolScope extends Disposable {
  readonly pool: PrivatePool;
  /** Ends the scope (same as disposing it); allocations go where they went before. */
  close(): void;
}

/** What a {@link PrivatePool} asks of the caching pool that made it. */
interface PrivatePoolHost {
  usage(): Usage;
  layout(): Layout;
  poolStats(): PoolStatsReport;
  emptyCache(): void;
  release(): void;
}

/**
 * A private pool (`torch.cuda.MemPool`): segments of its own inside a caching pool, filled by the
 * allocations made inside `CachingPool.usePrivatePool` or `CachingPool.withPrivatePool`, with
 * statistics of its own. Blocks are freed through the caching pool as usual.
 */
export class PrivatePool {
  /** @internal */
  constructor(
    /** @internal */ readonly owner: PoolOwner,
    private readonly host: PrivatePoolHost,
  ) {}

  /** 1, 2, ... in creation order. */
  get id(): number {
    return this.owner.id;
  }

  /** Whether {@link release} was called. */
  get released(): boolean {
    return this.owner.retired;
  }

  /** Figures of this pool's segments alone. */
  usage(): Usage {
    return this.host.usage();
  }

  /** This pool's segments and blocks. */
  layout(): Layout {
    return this.host.layout();
  }

  /** This pool's statistics, PyTorch-keyed. */
  poolStats(): PoolStatsReport {
    return this.host.poolStats();
  }

  /** `memory_stats()` of this pool alone. */
  memoryStats(): MemoryStats {
    return memoryStatsOf(this.host.poolStats());
  }

  /** Gives this pool's unused segments back to the source. */
  emptyCache(): void {
    this.host.emptyCache();
  }

  /**
   * Ends the pool: no scope may route to it any more, unused segments go back to the source now
   * and the others as soon as their blocks are all freed.
   */
  release(): void {
    this.host.release();
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

/** A new private pool of `p`. */
export function createPrivatePool(p: PoolCore): PrivatePool {
  const owner = new PoolOwner(p.nextPrivateId++, new PoolCounters());
  p.privatePools.add(owner);
  return new PrivatePool(owner, {
    // Each settles the parked free first (parked-free.ts): they read blocks and segments.
    usage: () => {
      settleParked(p);
      return usageOf(p, owner);
    },
    layout: () => {
      settleParked(p);
      return layoutOf(p, owner);
    },
    poolStats: () => {
      settleParked(p);
      return poolStatsOf(p, owner);
    },
    emptyCache: () => {
      settleParked(p);
      processEvents(p);
      releaseUnusedOf(p, owner);
    },
    release: () => {
      settleParked(p);
      if (owner.retired) return;
      owner.retired = true;
      if (p.target === owner) p.target = p.main;
      processEvents(p);
      releaseUnusedOf(p, owner);
      if (owner.segments.size === 0) p.privatePools.delete(owner);
    },
  });
}

/** Routes the allocations of `p` to `pool` until the returned scope closes. */
export function usePrivatePool(p: PoolCore, pool: PrivatePool): PrivatePoolScope {
  const owner = pool.owner;
  if (owner.retired || !p.privatePools.has(owner)) {
    throw new InvalidArgumentError(
      'pool',
      `private pool ${owner.id}`,
      'a live private pool of this caching pool',
    );
  }
  const previous = p.target;
  p.target = owner;
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    p.target = previous.retired ? p.main : previous;
  };
  return { pool, close, [Symbol.dispose]: close };
}
