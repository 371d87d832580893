/**
 * managedSource: unified (managed) memory from `cudaMallocManaged`, reachable from the host and
 * every device, with prefetch (`cudaMemPrefetchAsync`) and advice (`cudaMemAdvise`).
 *
 * CUDA 13 changed both calls to take a `struct cudaMemLocation` by value (and prefetch gained a
 * `flags` argument); CUDA 12 takes an `int` device (-1 for the host). The FFI layer picks the form
 * from `cudaRuntimeGetVersion`, so the same code runs on both.
 */
import { checkSize, InvalidArgumentError } from '@allot/core';
import {
  type CudaDeviceMemorySource,
  type CudaRegion,
  DEVICE_GRANULARITY,
  openDevice,
} from './device-source';
import { hostView } from './ffi/pointers';
import type { MemoryLocation } from './ffi/runtime';
import type { DeviceOptions } from './options';
import { checkLimit, RegionTable, regionLifecycle } from './region-table';
import { type CudaStream, eventMembers, streamEventHooks } from './streams';

/** `cudaMemAttachGlobal` / `cudaMemAttachHost`. */
const ATTACH = { global: 1, host: 2 } as const;

/** `cudaMemoryAdvise` by name. */
export const ManagedAdvice = {
  readMostly: 1,
  unsetReadMostly: 2,
  preferredLocation: 3,
  unsetPreferredLocation: 4,
  accessedBy: 5,
  unsetAccessedBy: 6,
} as const;
export type ManagedAdvice = keyof typeof ManagedAdvice;

/** Where managed memory should go: a device ordinal, or `'host'`. */
export type ManagedLocation = number | 'host';

/** A region of managed memory: host-accessible through `bytes`. */
export interface ManagedRegion extends CudaRegion {
  readonly bytes: Uint8Array;
}

/** Options of {@link managedSource}. */
export interface ManagedSourceOptions extends DeviceOptions {
  /** `global`: any stream may use the memory; `host`: only the host until attached. @defaultValue 'global' */
  readonly attach?: keyof typeof ATTACH;
  /** Most bytes held at once; `acquire` returns null past it. @defaultValue Infinity */
  readonly limit?: number;
}

/** A source of managed memory. */
export interface ManagedSource extends CudaDeviceMemorySource<ManagedRegion> {
  readonly kind: 'cuda-managed';
  view(address: number, size: number): Uint8Array;
  /** Migrates `[address, address + size)` to a device or the host, ordered on `stream`. */
  prefetch(address: number, size: number, to: ManagedLocation, stream?: CudaStream): void;
  /** Gives the driver a hint about `[address, address + size)`. */
  advise(address: number, size: number, advice: ManagedAdvice, location?: ManagedLocation): void;
}

function toLocation(where: ManagedLocation): MemoryLocation {
  if (where === 'host') return { kind: 'host' };
  if (!Number.isSafeInteger(where) || where < 0) {
    throw new InvalidArgumentError('location', where, "a device ordinal or 'host'");
  }
  return { kind: 'device', device: where };
}

/**
 * A memory source of managed memory (`cudaMallocManaged` / `cudaFree`).
 * @throws CudaUnavailableError when CUDA cannot be used here.
 */
export function managedSource(options: ManagedSourceOptions = {}): ManagedSource {
  const { runtime, device, total } = openDevice(options);
  const attach = options.attach ?? 'global';
  if (!(attach in ATTACH)) throw new InvalidArgumentError('attach', attach, "'global' or 'host'");
  const limit = checkLimit(options.limit);
  const table = new RegionTable<ManagedRegion>();
  const hooks = streamEventHooks(runtime, device);

  const regions = regionLifecycle({
    granularity: DEVICE_GRANULARITY,
    limit,
    table,
    allocate(rounded): ManagedRegion {
      const address = runtime.mallocManaged(rounded, ATTACH[attach], device);
      return { address, size: rounded, device, bytes: new Uint8Array(hostView(address, rounded)) };
    },
    free: (region) => runtime.free(region.address),
  });

  function checkRange(address: number, size: number): void {
    checkSize(size);
    table.containing(address, size);
  }

  return {
    kind: 'cuda-managed',
    granularity: DEVICE_GRANULARITY,
    hostAccessible: true,
    device,
    totalMemory: total,
    acquire: regions.acquire,
    acquireOrThrow: regions.acquireOrThrow,
    release: regions.release,
    view: (address: number, size: number) => table.view(address, size),
    prefetch(address: number, size: number, to: ManagedLocation, stream?: CudaStream): void {
      checkRange(address, size);
      runtime.memPrefetch(address, size, toLocation(to), stream?.handle ?? 0);
    },
    advise(
      address: number,
      size: number,
      advice: ManagedAdvice,
      location: ManagedLocation = device,
    ): void {
      checkRange(address, size);
      const code = ManagedAdvice[advice];
      if (code === undefined) {
        throw new InvalidArgumentError('advice', advice, Object.keys(ManagedAdvice).join(', '));
      }
      runtime.memAdvise(address, size, code, toLocation(location));
    },
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
