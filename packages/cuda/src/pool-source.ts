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
import {
  checkNonNegativeInteger,
  checkSize,
  OutOfMemoryError,
  UnsupportedError,
} from '@allot/core';
import {
  type CudaDeviceMemorySource,
  type CudaRegion,
  DEVICE_GRANULARITY,
  openDevice,
} from './device-source';
import { Attribute, PoolAttribute } from './ffi/runtime';
import type { DeviceOptions } from './options';
import { checkLimit, RegionTable, roundRequest } from './region-table';
import { type CudaStream, streamEventHooks } from './streams';

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

  function allocate(rounded: number): CudaRegion {
    runtime.useDevice(device);
    const address = runtime.mallocFromPool(rounded, pool, stream, device);
    return table.add({ address, size: rounded, device });
  }

  return {
    kind: 'cuda-pool',
    granularity: DEVICE_GRANULARITY,
    hostAccessible: false,
    device,
    pool,
    totalMemory: total,
    acquire(size: number): CudaRegion | null {
      const rounded = roundRequest(size, DEVICE_GRANULARITY, table.reservedBytes, limit);
      if (rounded === null) return null;
      try {
        return allocate(rounded);
      } catch (error) {
        if (OutOfMemoryError.isInstance(error)) return null;
        throw error;
      }
    },
    acquireOrThrow(size: number): CudaRegion {
      const rounded = roundRequest(size, DEVICE_GRANULARITY, table.reservedBytes, limit);
      if (rounded === null) {
        throw new OutOfMemoryError({
          requested: size,
          alignment: DEVICE_GRANULARITY,
          capacity: limit,
          freeBytes: limit - table.reservedBytes,
          largestFreeBlock: limit - table.reservedBytes,
          detail: `The source's limit of ${limit} bytes would be exceeded.`,
        });
      }
      return allocate(rounded);
    },
    release(region: CudaRegion): void {
      table.remove(region);
      try {
        runtime.freeAsync(region.address, stream);
      } catch (error) {
        table.add(region);
        throw error;
      }
    },
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
    reservedBytes: () => table.reservedBytes,
    memoryInfo: () => runtime.memGetInfo(device),
    regions: () => table.values(),
    recordEvent: hooks.recordEvent,
    queryEvent: hooks.queryEvent,
    synchronizeEvent: hooks.synchronizeEvent,
    destroyEvent: hooks.destroyEvent,
    dispose(): void {
      for (const region of table.values()) {
        table.remove(region);
        runtime.freeAsync(region.address, stream);
      }
      hooks.disposeEvents();
      runtime.streamSynchronize(stream);
      if (ownPool) runtime.memPoolDestroy(pool);
    },
  };
}
