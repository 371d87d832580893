/**
 * cachingDeviceAllocator: `@allot/caching`'s pool over CUDA device memory, with PyTorch's policy,
 * defaults and `PYTORCH_CUDA_ALLOC_CONF` syntax: the allocator an ML engineer reaches for.
 *
 * ```
 *  allocate / allocateOn(stream.handle, size) ──► CachingPool (PyTorch's rules, statistics)
 *                                                     │ segments (2 MiB, 20 MiB, ...)
 *                                                     ▼
 *          expandable_segments:True ─► expandableSource (cuMemCreate/cuMemMap: grows in place)
 *          otherwise                ─► deviceSource     (cudaMalloc / cudaFree)
 *  recordStream(address, stream.handle) ─► CUDA events on the source; reuse once they complete
 * ```
 *
 * The configuration comes from `config`, else `ALLOT_ALLOC_CONF` (pass
 * `config: process.env.PYTORCH_CUDA_ALLOC_CONF` to share PyTorch's). `expandable_segments:True`
 * uses the driver's virtual-memory API when the device supports it and falls back to `cudaMalloc`
 * segments when it does not (`expandableSegments` says which). Statistics: `memoryStats()` has the keys of
 * `torch.cuda.memory_stats()`; wrap it in `withStats` from `@allot/stats` for snapshots
 * (`toTorchSnapshot`, the PyTorch memory visualiser's format) and traces.
 */
import {
  allocConfFromEnv,
  CachingPool,
  type CachingPoolOptions,
  parseAllocConf,
} from '@allot/caching';
import { InvalidArgumentError, UnsupportedError } from '@allot/core';
import {
  type CopyOptions,
  copyDeviceToDevice,
  copyDeviceToHost,
  copyHostToDevice,
  type DeviceCopyOptions,
  deviceSpan,
  fillDevice,
} from './copies';
import { type CudaDeviceMemorySource, type DeviceMemoryInfo, deviceSource } from './device-source';
import { CudaUnavailableError } from './errors';
import { expandableSource } from './expandable-source';
import type { CudaLibraryOptions, DeviceOptions } from './options';

/** Options of {@link cachingDeviceAllocator}. */
export interface CachingDeviceAllocatorOptions
  extends DeviceOptions,
    Omit<CachingPoolOptions, 'source' | 'totalMemory'> {
  /**
   * Most bytes the pool may reserve from the device (on top of `memoryFraction`).
   * @defaultValue no cap beyond the device's memory
   */
  readonly limit?: number;
}

/** The caching pool over one device's memory. */
export class CachingDeviceAllocator extends CachingPool implements Disposable {
  /** Device ordinal. */
  readonly device: number;
  /** Whether segments grow in place (expandable segments on the driver's virtual-memory API). */
  readonly expandableSegments: boolean;
  /** Where segments come from. */
  readonly deviceMemory: CudaDeviceMemorySource;
  private readonly library: CudaLibraryOptions;

  constructor(options: CachingDeviceAllocatorOptions = {}) {
    const config = options.config ?? allocConfFromEnv(options.env);
    const wantsExpandable = parseAllocConf(config).expandableSegments;
    const library: CudaLibraryOptions = {
      ...(options.runtimePath === undefined ? {} : { runtimePath: options.runtimePath }),
      ...(options.driverPath === undefined ? {} : { driverPath: options.driverPath }),
      ...(options.env === undefined ? {} : { env: options.env }),
    };
    const sourceOptions = {
      ...library,
      ...(options.device === undefined ? {} : { device: options.device }),
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    };
    let source: CudaDeviceMemorySource | null = null;
    if (wantsExpandable) {
      try {
        source = expandableSource(sourceOptions);
      } catch (error) {
        // No driver library or no virtual-memory support: plain cudaMalloc segments, as documented.
        if (!CudaUnavailableError.isInstance(error) && !UnsupportedError.isInstance(error))
          throw error;
        if (CudaUnavailableError.isInstance(error) && error.api === 'runtime') throw error;
      }
    }
    source ??= deviceSource(sourceOptions);
    super({ ...options, config, source, totalMemory: source.totalMemory });
    this.device = source.device;
    this.expandableSegments = source.kind === 'cuda-expandable';
    this.deviceMemory = source;
    this.library = library;
  }

  /** Free and total bytes of the device now. */
  memoryInfo(): DeviceMemoryInfo {
    return this.deviceMemory.memoryInfo();
  }

  /** Copies all of `data` into the block at `address` (bounded by its usable size). */
  copyFromHost(
    address: number,
    data: ArrayBufferView,
    options: Omit<CopyOptions, keyof DeviceOptions> = {},
  ): void {
    copyHostToDevice(deviceSpan(this, address), data, { ...options, ...this.library });
  }

  /** Fills all of `out` from the block at `address` (bounded by its usable size). */
  copyToHost(
    address: number,
    out: ArrayBufferView,
    options: Omit<CopyOptions, keyof DeviceOptions> = {},
  ): void {
    copyDeviceToHost(out, deviceSpan(this, address), { ...options, ...this.library });
  }

  /** Copies `bytes` bytes between two blocks of this allocator. */
  copyWithin(
    dst: number,
    src: number,
    bytes: number,
    options: Omit<DeviceCopyOptions, keyof DeviceOptions> = {},
  ): void {
    copyDeviceToDevice(deviceSpan(this, dst), deviceSpan(this, src), bytes, {
      ...options,
      ...this.library,
    });
  }

  /** Sets the whole block at `address` (or its first `bytes`) to `value`. */
  fill(address: number, value: number, bytes?: number): void {
    fillDevice(deviceSpan(this, address), value, bytes, this.library);
  }

  /** Gives every segment back (waiting for pending stream uses) and the source's spare events. */
  dispose(): void {
    this.emptyCache();
    if (this.usage().liveCount > 0) {
      throw new InvalidArgumentError(
        'allocator',
        this.usage().liveCount,
        'no live blocks when disposed',
      );
    }
    this.deviceMemory.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/**
 * A caching allocator over CUDA device memory.
 * @throws CudaUnavailableError when CUDA cannot be used here.
 */
export function cachingDeviceAllocator(
  options: CachingDeviceAllocatorOptions = {},
): CachingDeviceAllocator {
  return new CachingDeviceAllocator(options);
}
