/**
 * cachingHostAllocator: `@allot/caching` over a {@link numaSource}, as PyTorch's pinned-memory
 * allocator caches `cudaHostAlloc` blocks: staging buffers on one NUMA node, page-locked, reused
 * instead of mapped, bound, faulted and locked again for each transfer.
 *
 * ```
 *  allocate(size) ─► CachingPool (512 B rounding, small/large pools, best fit, splitting)
 *                       │ miss
 *                       ▼
 *                    numaSource.acquire(2 MiB | 20 MiB | rounded size)
 *                       mmap ─► mbind(node) ─► prefault ─► mlock | cudaHostRegister
 * ```
 */
import { type CachingPool, type CachingPoolOptions, cachingPool } from '@allot/caching';
import { type NumaSource, type NumaSourceOptions, numaSource, type PinMode } from './numa-source';

/** Options of {@link cachingHostAllocator}: a NUMA source's and a caching pool's. */
export interface CachingHostAllocatorOptions
  extends NumaSourceOptions,
    Omit<CachingPoolOptions, 'source'> {
  /**
   * How segments are page-locked. @defaultValue 'cuda' when `cuda` hooks are given, else 'mlock'
   */
  readonly pin?: PinMode;
}

/** A caching pool whose source is a {@link NumaSource}. */
export interface CachingHostAllocator extends CachingPool {
  readonly source: NumaSource;
}

/**
 * Makes a caching allocator of page-locked host memory on one NUMA node.
 * @throws the errors of {@link numaSource} and of `cachingPool`.
 */
export function cachingHostAllocator(options: CachingHostAllocatorOptions): CachingHostAllocator {
  const pin: PinMode = options.pin ?? (options.cuda ? 'cuda' : 'mlock');
  const source = numaSource({ ...options, pin });
  const { config, env, totalMemory, memoryFraction, decayMs, clock } = options;
  const pool = cachingPool({
    source,
    ...(config === undefined ? {} : { config }),
    ...(env === undefined ? {} : { env }),
    ...(totalMemory === undefined ? {} : { totalMemory }),
    ...(memoryFraction === undefined ? {} : { memoryFraction }),
    ...(decayMs === undefined ? {} : { decayMs }),
    ...(clock === undefined ? {} : { clock }),
  });
  return pool as CachingHostAllocator;
}
