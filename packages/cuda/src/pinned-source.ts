/**
 * pinnedSource: page-locked host memory from `cudaHostAlloc` (fast, truly asynchronous copies),
 * host-accessible through typed views; and `registerHostMemory`, which page-locks memory the
 * caller already has (`cudaHostRegister`), such as NUMA-local buffers from `@allot/numa`.
 */
import { checkSize, InvalidArgumentError, type MemorySource, type Region } from '@allot/core';
import { openRuntime } from './ffi/open';
import { addressOf, hostView } from './ffi/pointers';
import type { CudaLibraryOptions } from './options';
import { checkLimit, RegionTable, regionLifecycle } from './region-table';

/** Pinned regions are whole pages. */
export const PINNED_GRANULARITY = 4096;

/** `cudaHostAlloc*` flags. */
const HOST_ALLOC = { portable: 1, mapped: 2, writeCombined: 4 } as const;
/** `cudaHostRegister*` flags. */
const HOST_REGISTER = { portable: 1, mapped: 2, ioMemory: 4, readOnly: 8 } as const;

/** A region of pinned host memory. */
export interface PinnedRegion extends Region {
  readonly bytes: Uint8Array;
}

/** Options of {@link pinnedSource}. */
export interface PinnedSourceOptions extends CudaLibraryOptions {
  /** Pinned for every CUDA context, not only the current one. @defaultValue true */
  readonly portable?: boolean;
  /** Mapped into the device address space. @defaultValue false */
  readonly mapped?: boolean;
  /** Write-combined: faster host-to-device copies, very slow host reads. @defaultValue false */
  readonly writeCombined?: boolean;
  /** Most bytes held at once; `acquire` returns null past it. @defaultValue Infinity */
  readonly limit?: number;
}

/** A source of pinned host memory. */
export interface PinnedSource extends MemorySource<PinnedRegion> {
  readonly kind: 'cuda-pinned';
  view(address: number, size: number): Uint8Array;
  /** Like `acquire`, but out of memory is an `OutOfMemoryError`. */
  acquireOrThrow(size: number): PinnedRegion;
  regions(): readonly PinnedRegion[];
  /** Gives every live region back. */
  dispose(): void;
}

/**
 * A memory source of pinned host memory (`cudaHostAlloc` / `cudaFreeHost`).
 * @throws CudaUnavailableError when CUDA cannot be used here.
 */
export function pinnedSource(options: PinnedSourceOptions = {}): PinnedSource {
  const { runtime } = openRuntime(options);
  const flags =
    ((options.portable ?? true) ? HOST_ALLOC.portable : 0) +
    (options.mapped ? HOST_ALLOC.mapped : 0) +
    (options.writeCombined ? HOST_ALLOC.writeCombined : 0);
  const limit = checkLimit(options.limit);
  const table = new RegionTable<PinnedRegion>();

  const regions = regionLifecycle({
    granularity: PINNED_GRANULARITY,
    limit,
    table,
    allocate(rounded): PinnedRegion {
      const address = runtime.hostAlloc(rounded, flags);
      return { address, size: rounded, bytes: new Uint8Array(hostView(address, rounded)) };
    },
    free: (region) => runtime.freeHost(region.address),
  });

  return {
    kind: 'cuda-pinned',
    granularity: PINNED_GRANULARITY,
    hostAccessible: true,
    acquire: regions.acquire,
    acquireOrThrow: regions.acquireOrThrow,
    release: regions.release,
    view: (address: number, size: number) => table.view(address, size),
    reservedBytes: regions.reservedBytes,
    regions: regions.regions,
    dispose: regions.releaseAll,
  };
}

/** Typed arrays under registration, held so the collector cannot free them while page-locked. */
const held = new WeakMap<HostRegistration, ArrayBufferView>();

/** Host memory to page-lock: a typed array or buffer view, or an address and size from native code. */
export type HostMemory = ArrayBufferView | { readonly address: number; readonly size: number };

/** Options of {@link registerHostMemory}. */
export interface RegisterHostMemoryOptions extends CudaLibraryOptions {
  /** Pinned for every CUDA context. @defaultValue true */
  readonly portable?: boolean;
  /** Mapped into the device address space. @defaultValue false */
  readonly mapped?: boolean;
  /** The device only reads the memory. @defaultValue false */
  readonly readOnly?: boolean;
  /** The memory is I/O memory (a PCI BAR), not ordinary RAM. @defaultValue false */
  readonly ioMemory?: boolean;
}

/** Page-locked caller memory; `unregister()` (or `using`) unlocks it. */
export interface HostRegistration extends Disposable {
  readonly address: number;
  readonly size: number;
  unregister(): void;
}

/**
 * Page-locks memory the caller owns (`cudaHostRegister`) so copies from and to it are asynchronous.
 * Keep the memory alive until `unregister()`; a typed array is held by the registration.
 * @throws CudaUnavailableError when CUDA cannot be used here; CudaError when CUDA refuses (for
 * example `cudaErrorHostMemoryAlreadyRegistered`).
 */
export function registerHostMemory(
  memory: HostMemory,
  options: RegisterHostMemoryOptions = {},
): HostRegistration {
  let address: number;
  let size: number;
  let keep: ArrayBufferView | null = null;
  if (ArrayBuffer.isView(memory)) {
    size = memory.byteLength;
    checkSize(size, 'memory.byteLength');
    address = addressOf(memory);
    keep = memory;
  } else {
    address = memory?.address;
    size = memory?.size;
    if (!Number.isSafeInteger(address) || address <= 0) {
      throw new InvalidArgumentError('memory.address', address, 'a positive safe integer address');
    }
    checkSize(size, 'memory.size');
  }
  const { runtime } = openRuntime(options);
  const flags =
    ((options.portable ?? true) ? HOST_REGISTER.portable : 0) +
    (options.mapped ? HOST_REGISTER.mapped : 0) +
    (options.readOnly ? HOST_REGISTER.readOnly : 0) +
    (options.ioMemory ? HOST_REGISTER.ioMemory : 0);
  runtime.hostRegister(address, size, flags);
  let registered = true;
  const registration: HostRegistration = {
    address,
    size,
    unregister(): void {
      if (!registered) return;
      runtime.hostUnregister(address);
      registered = false;
      held.delete(registration);
    },
    [Symbol.dispose](): void {
      registration.unregister();
    },
  };
  if (keep !== null) held.set(registration, keep);
  return registration;
}
