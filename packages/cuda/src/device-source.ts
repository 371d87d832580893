/**
 * deviceSource: device memory from `cudaMalloc` and back with `cudaFree`, as a core `MemorySource`
 * (so `@allot/caching` and every strategy can grow over it), with the caching pool's stream hooks
 * on real CUDA events.
 *
 * ```
 *  acquire(size) ─► round to 512 B ─► limit? ─► cudaMalloc ─► region { address, size, device }
 *                                                   └─ status 2 (out of memory) ─► null
 *  release(region) ─► cudaFree            acquireOrThrow(size) ─► OutOfMemoryError with the
 *                                                                  device's free/total memory
 * ```
 */
import type { MemorySource, Region } from '@allot/core';
import { openRuntime } from './ffi/open';
import type { RuntimeLibrary } from './ffi/runtime';
import type { DeviceOptions } from './options';
import { checkLimit, RegionTable, regionLifecycle } from './region-table';
import { checkDevice, eventMembers, type StreamEventHooks, streamEventHooks } from './streams';

/** `cudaMalloc` returns 256-byte aligned memory; the caching pool works in 512-byte blocks. */
export const DEVICE_GRANULARITY = 512;

/** A region of CUDA memory. */
export interface CudaRegion extends Region {
  /** Device ordinal the memory belongs to. */
  readonly device: number;
}

/** Options of {@link deviceSource}. */
export interface DeviceSourceOptions extends DeviceOptions {
  /** Most bytes held at once; `acquire` returns null past it. @defaultValue Infinity */
  readonly limit?: number;
}

/** Free and total bytes of a device, as `cudaMemGetInfo` reports them. */
export interface DeviceMemoryInfo {
  readonly free: number;
  readonly total: number;
}

/** What every CUDA device-memory source offers beyond `MemorySource`. */
export interface CudaDeviceMemorySource<R extends CudaRegion = CudaRegion>
  extends MemorySource<R>,
    Omit<StreamEventHooks, 'disposeEvents'> {
  readonly device: number;
  /** Total bytes of the device. */
  readonly totalMemory: number;
  /** Free and total bytes of the device now. */
  memoryInfo(): DeviceMemoryInfo;
  /**
   * Like `acquire`, but out of memory is an `OutOfMemoryError` with the byte count and the device's
   * free and total memory.
   */
  acquireOrThrow(size: number): R;
  /** Live regions in address order. */
  regions(): readonly R[];
  /** Gives every live region back and destroys the spare events. */
  dispose(): void;
}

/** A source of `cudaMalloc` memory. */
export interface DeviceSource extends CudaDeviceMemorySource {
  readonly kind: 'cuda-device';
}

/** Device, runtime and total memory, checked: the start of every device source. */
export function openDevice(options: DeviceOptions): {
  runtime: RuntimeLibrary;
  device: number;
  total: number;
} {
  const { runtime, deviceCount } = openRuntime(options);
  const device = options.device ?? 0;
  checkDevice(device, deviceCount);
  const { total } = runtime.memGetInfo(device);
  return { runtime, device, total };
}

/**
 * A memory source of device memory (`cudaMalloc` / `cudaFree`).
 * @throws CudaUnavailableError when CUDA cannot be used here.
 */
export function deviceSource(options: DeviceSourceOptions = {}): DeviceSource {
  const { runtime, device, total } = openDevice(options);
  const limit = checkLimit(options.limit);
  const table = new RegionTable<CudaRegion>();
  const hooks = streamEventHooks(runtime, device);

  const regions = regionLifecycle({
    granularity: DEVICE_GRANULARITY,
    limit,
    table,
    allocate: (rounded) => ({ address: runtime.malloc(rounded, device), size: rounded, device }),
    free: (region) => runtime.free(region.address),
  });

  return {
    kind: 'cuda-device',
    granularity: DEVICE_GRANULARITY,
    hostAccessible: false,
    device,
    totalMemory: total,
    acquire: regions.acquire,
    acquireOrThrow: regions.acquireOrThrow,
    release: regions.release,
    reservedBytes: regions.reservedBytes,
    memoryInfo: () => runtime.memGetInfo(device),
    regions: regions.regions,
    ...eventMembers(hooks),
    dispose(): void {
      regions.releaseAll();
      hooks.disposeEvents();
    },
  };
}
