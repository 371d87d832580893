/**
 * What CUDA can offer on this machine, without throwing: `isAvailable()`, `devices()` and
 * `cudaStatus()` (which also says why CUDA is unavailable).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openRuntime } from './ffi/open';
import { Attribute, type RuntimeLibrary } from './ffi/runtime';
import type { CudaLibraryOptions } from './options';

/** Where Linux lists PCI devices (each has a `numa_node` file). */
export const PCI_DEVICES_PATH = '/sys/bus/pci/devices';

/** One CUDA device. */
export interface CudaDeviceInfo {
  /** Device ordinal. */
  readonly index: number;
  /** Marketing name, for example `NVIDIA H100 80GB HBM3`. */
  readonly name: string;
  /** Bytes of device memory. */
  readonly totalMemory: number;
  /** Bytes free now (`cudaMemGetInfo`). */
  readonly freeMemory: number;
  /** PCI address, `domain:bus:device.function` in lower case (`0000:3b:00.0`). */
  readonly pciBusId: string;
  /** NUMA node the device is attached to, or `null` when the system does not say. */
  readonly numaNode: number | null;
  /** Compute capability, for example `{ major: 9, minor: 0 }`. */
  readonly computeCapability: { readonly major: number; readonly minor: number };
}

/** Options of {@link devices}. */
export interface DevicesOptions extends CudaLibraryOptions {
  /** Directory of PCI devices read for NUMA nodes. @defaultValue '/sys/bus/pci/devices' */
  readonly pciDevicesPath?: string;
}

/** Why CUDA can or cannot be used here. */
export interface CudaStatus {
  readonly available: boolean;
  /** Devices CUDA reports (0 when unavailable). */
  readonly deviceCount: number;
  /** The runtime library that loaded, when one did. */
  readonly runtimePath?: string;
  /** `cudaRuntimeGetVersion` (13000 for CUDA 13.0), when a runtime loaded. */
  readonly runtimeVersion?: number;
  /** `cudaDriverGetVersion` (0: no driver), when a runtime loaded. */
  readonly driverVersion?: number;
  /** The error that makes CUDA unavailable. */
  readonly error?: Error;
}

/** Whether CUDA has a runtime, a driver and at least one device here. Never throws. */
export function isAvailable(options: CudaLibraryOptions = {}): boolean {
  try {
    openRuntime(options);
    return true;
  } catch {
    return false;
  }
}

/** What CUDA can offer here, and why not when it cannot. Never throws. */
export function cudaStatus(options: CudaLibraryOptions = {}): CudaStatus {
  try {
    const { runtime, deviceCount } = openRuntime(options);
    return {
      available: true,
      deviceCount,
      runtimePath: runtime.path,
      runtimeVersion: runtime.version,
      driverVersion: runtime.driverVersion(),
    };
  } catch (error) {
    const loadedPath = (error as { loadedPath?: string }).loadedPath;
    return {
      available: false,
      deviceCount: 0,
      ...(loadedPath === undefined ? {} : { runtimePath: loadedPath }),
      error: error as Error,
    };
  }
}

function numaNodeOf(pciDevicesPath: string, busId: string): number | null {
  if (busId === '') return null;
  try {
    const value = Number.parseInt(
      readFileSync(join(pciDevicesPath, busId, 'numa_node'), 'utf8').trim(),
      10,
    );
    return Number.isInteger(value) && value >= 0 ? value : null; // -1: the system does not know
  } catch {
    return null;
  }
}

function attempt<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

function describe(runtime: RuntimeLibrary, index: number, pciDevicesPath: string): CudaDeviceInfo {
  const memory = attempt(() => runtime.memGetInfo(index), { free: 0, total: 0 });
  const pciBusId = attempt(() => runtime.pciBusId(index).toLowerCase(), '');
  return {
    index,
    name: attempt(() => runtime.deviceName(index), ''),
    totalMemory: memory.total,
    freeMemory: memory.free,
    pciBusId,
    numaNode: numaNodeOf(pciDevicesPath, pciBusId),
    computeCapability: {
      major: attempt(() => runtime.attribute(Attribute.ComputeCapabilityMajor, index), 0),
      minor: attempt(() => runtime.attribute(Attribute.ComputeCapabilityMinor, index), 0),
    },
  };
}

/** Every CUDA device, or `[]` when CUDA is unavailable. Never throws. */
export function devices(options: DevicesOptions = {}): CudaDeviceInfo[] {
  let opened: ReturnType<typeof openRuntime>;
  try {
    opened = openRuntime(options);
  } catch {
    return [];
  }
  const path = options.pciDevicesPath ?? PCI_DEVICES_PATH;
  const out: CudaDeviceInfo[] = [];
  for (let index = 0; index < opened.deviceCount; index++)
    out.push(describe(opened.runtime, index, path));
  return out;
}
