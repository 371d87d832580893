/**
 * memoryPoolSource: stream-ordered device memory from a CUDA memory pool (`cudaMemPoolCreate` with a
 * release threshold, `cudaMallocFromPoolAsync` / `cudaFreeAsync`), as a core `MemorySource`.
 *
 * ```
 *  acquire(size) ─► cudaMallocFromPoolAsync(size, pool, stream)   (usable by work queued after it)
 *  release(r)    ─► cudaFreeAsync(r.address, stream)               (reusable once the stream gets there)
 *                    pool keeps up to releaseThreshold bytes across synchronizations; trimTo() gives more back
 * ```
 *
 * Segments follow the source's `stream`; `allocateAsync` / `freeAsync` take any stream, for code that
 * wants CUDA's own stream-ordered allocator per allocation.
 */
import { checkNonNegativeInteger, checkSize, UnsupportedError } from '@allot/core';
import {
  type CudaDeviceMemorySource,
  type CudaRegion,
  DEVICE_GRANULARITY,
  openDevice,
} from './device-source';
import { Attribute, PoolAttribute } from './ffi/runtime';
import type { DeviceOptions } from './options';
import { checkLimit, RegionTable, regionLifecycle } from './region-table';
import { type CudaStream, eventMembers, streamEventHooks } from './streams';

/** Options of {@link memoryPoolSource}. */
export interface MemoryPoolSourceOptions extends DeviceOptions {
  /**
   * Bytes the pool keeps cached across synchronizations instead of giving them back to the device
   * (`cudaMemPoolAttrReleaseThreshold`). `Infinity`: keep everything.
   * @defaultValue 0 (CUDA's default: give back at every synchronization)
   */
  readonly releaseThreshold?: number;
  /** Use the device's default pool instead of creating one. @defaultValue false */
  readonly useDefaultPool?: boolean;
  /** Stream that `acquire` and `release` are ordered on. @defaultValue the legacy default stream */
  readonly stream?: CudaStream;
  /** Most bytes held at once by `acquire`; it returns null past it. @defaultValue Infinity */
  readonly limit?: number;
}

/** A source of stream-ordered memory from a CUDA memory pool. */
export interface MemoryPoolSource extends CudaDeviceMemorySource {
  readonly kind: 'cuda-pool';
  /** `cudaMemPool_t` as a number. */
  readonly pool: number;
  /** Stream-ordered allocation on any stream; throws `OutOfMemoryError` when the device is full. */
  allocateAsync(size: number, stream?: CudaStream): number;
  /** Stream-ordered free on any stream. */
  freeAsync(address: number, stream?: CudaStream): void;
  /** Bytes the pool holds on the device (`cudaMemPoolAttrReservedMemCurrent`). */
  poolReservedBytes(): number;
  /** Bytes in live pool allocations (`cudaMemPoolAttrUsedMemCurrent`). */
  poolUsedBytes(): number;
  /** Gives cached memory back until the pool holds at most `bytes` unused (`cudaMemPoolTrimTo`). */
  trimTo(bytes: number): void;
}

const UINT64_MAX_AS_NUMBER = Number.MAX_SAFE_INTEGER;

/**
 * A memory source over a CUDA memory pool.
 * @throws CudaUnavailableError when CUDA cannot be used here; UnsupportedError when the device has
 * no memory pools.
 */
export function memoryPoolSource(options: MemoryPoolSourceOptions = {}): MemoryPoolSource {
  const { runtime, device, total } = openDevice(options);
  if (runtime.attribute(Attribute.MemoryPoolsSupported, device) === 0) {
    throw new UnsupportedError(
      `Device ${device} does not support CUDA memory pools (cudaDevAttrMemoryPoolsSupported is 0).`,
    );
  }
  const threshold = options.releaseThreshold ?? 0;
  if (threshold !== Number.POSITIVE_INFINITY)
    checkNonNegativeInteger(threshold, 'releaseThreshold');
  const limit = checkLimit(options.limit);
  const stream = options.stream?.handle ?? 0;
  const ownPool = !(options.useDefaultPool ?? false);
  const pool = ownPool
    ? runtime.memPoolCreate(device, Math.min(threshold, UINT64_MAX_AS_NUMBER))
    : runtime.defaultMemPool(device);
  if (!ownPool && options.releaseThreshold !== undefined) {
    runtime.memPoolSetAttribute(
      pool,
      PoolAttribute.ReleaseThreshold,
      Math.min(threshold, UINT64_MAX_AS_NUMBER),
    );
  }
  const table = new RegionTable<CudaRegion>();
  const hooks = streamEventHooks(runtime, device);

  const regions = regionLifecycle({
    granularity: DEVICE_GRANULARITY,
    limit,
    table,
    allocate(rounded): CudaRegion {
      runtime.useDevice(device);
      return {
        address: runtime.mallocFromPool(rounded, pool, stream, device),
        size: rounded,
        device,
      };
    },
    free: (region) => runtime.freeAsync(region.address, stream),
  });

  return {
    kind: 'cuda-pool',
    granularity: DEVICE_GRANULARITY,
    hostAccessible: false,
    device,
    pool,
    totalMemory: total,
    acquire: regions.acquire,
    acquireOrThrow: regions.acquireOrThrow,
    release: regions.release,
    allocateAsync(size: number, on?: CudaStream): number {
      checkSize(size);
      runtime.useDevice(device);
      return runtime.mallocFromPool(size, pool, on?.handle ?? stream, device);
    },
    freeAsync(address: number, on?: CudaStream): void {
      runtime.freeAsync(address, on?.handle ?? stream);
    },
    poolReservedBytes: () => runtime.memPoolAttribute(pool, PoolAttribute.ReservedMemCurrent),
    poolUsedBytes: () => runtime.memPoolAttribute(pool, PoolAttribute.UsedMemCurrent),
    trimTo(bytes: number): void {
      checkNonNegativeInteger(bytes, 'bytes');
      runtime.memPoolTrimTo(pool, bytes);
    },
    reservedBytes: regions.reservedBytes,
    memoryInfo: () => runtime.memGetInfo(device),
    regions: regions.regions,
    ...eventMembers(hooks),
    dispose(): void {
      regions.releaseAll();
      hooks.disposeEvents();
      runtime.streamSynchronize(stream);
      if (ownPool) runtime.memPoolDestroy(pool);
    },
  };
}
