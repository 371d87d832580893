/**
 * The optional bridge to CUDA: page-locking host memory with `cudaHostRegister` (so the driver can
 * copy from it asynchronously, without a staging copy) and finding a GPU's PCI bus id, to place
 * memory on the GPU's node.
 *
 * `@allot/numa` never imports `@allot/cuda` statically: {@link loadCudaHooks} imports it when
 * called, and returns null when it is not installed or exposes no such functions. Anything that
 * implements {@link CudaHooks} works as well (another CUDA binding, or a fake in tests).
 */
import { InvalidArgumentError } from '@allot/core';
import { nodeOfPciDevice, type TopologyOptions } from './topology';

/** What `@allot/numa` needs from a CUDA binding. Addresses and sizes are in bytes. */
export interface CudaHooks {
  /** `cudaHostRegister(address, size, cudaHostRegisterDefault)`: page-locks and registers the range. */
  hostRegister(address: number, size: number): void;
  /** `cudaHostUnregister(address)`: undoes {@link CudaHooks.hostRegister}. */
  hostUnregister(address: number): void;
  /** `cudaDeviceGetPCIBusId(device)`: the device's PCI bus id, for example `0000:3B:00.0`. */
  pciBusId?(device: number): string;
}

/** The package name, in a variable so that bundlers and type checkers leave it optional. */
const CUDA_PACKAGE: string = '@allot/cuda';

type AnyFunction = (...args: unknown[]) => unknown;

interface Registration {
  unregister(): void;
}

function exported(module: Record<string, unknown>, name: string): AnyFunction | undefined {
  const direct = module[name];
  if (typeof direct === 'function') return direct as AnyFunction;
  const inner = module.default as Record<string, unknown> | undefined;
  const nested = typeof inner === 'object' && inner !== null ? inner[name] : undefined;
  return typeof nested === 'function' ? (nested as AnyFunction) : undefined;
}

/**
 * Adapts a loaded `@allot/cuda` module (`registerHostMemory`, `isAvailable`, `devices`); null when
 * it lacks host registration or reports no usable CUDA. Exported for tests.
 * @internal
 */
export function cudaHooksFromModule(module: unknown): CudaHooks | null {
  if (typeof module !== 'object' || module === null) return null;
  const record = module as Record<string, unknown>;
  const register = exported(record, 'registerHostMemory');
  if (register === undefined) return null;
  const isAvailable = exported(record, 'isAvailable');
  if (isAvailable !== undefined && isAvailable() !== true) return null;
  const devices = exported(record, 'devices');
  const registrations = new Map<number, Registration>();
  return {
    hostRegister: (address, size) => {
      const registration = register({ address, size }) as Registration;
      registrations.set(address, registration);
    },
    hostUnregister: (address) => {
      const registration = registrations.get(address);
      if (registration === undefined) {
        throw new InvalidArgumentError(
          'address',
          address,
          'an address registered through these hooks',
        );
      }
      registration.unregister();
      registrations.delete(address);
    },
    ...(devices === undefined
      ? {}
      : {
          pciBusId: (device: number) => {
            const list = devices() as readonly { index: number; pciBusId: string }[];
            const found = list.find((d) => d.index === device);
            if (found === undefined) {
              throw new InvalidArgumentError(
                'device',
                device,
                `a CUDA device of this machine (${list.length} found)`,
              );
            }
            return found.pciBusId;
          },
        }),
  };
}

/**
 * Imports `@allot/cuda` now and returns hooks over its `registerHostMemory` and `devices`; null
 * when the package is not installed, cannot load, or finds no usable CUDA here. Never throws.
 */
export async function loadCudaHooks(): Promise<CudaHooks | null> {
  try {
    return cudaHooksFromModule(await import(CUDA_PACKAGE));
  } catch {
    return null;
  }
}

/** Options of {@link nodeOfCudaDevice}. */
export interface CudaDeviceNodeOptions extends TopologyOptions {
  /** Hooks that give the device's PCI bus id. @defaultValue await loadCudaHooks() */
  readonly cuda?: CudaHooks | null;
}

/**
 * NUMA node of CUDA device `device` (its PCI bus id from the CUDA hooks, then sysfs); null when the
 * firmware does not say. Without CUDA, pass the bus id to {@link nodeOfPciDevice} instead.
 * @throws InvalidArgumentError when `device` is not a non-negative integer, or when no CUDA hooks
 *   with `pciBusId` are available.
 */
export async function nodeOfCudaDevice(
  device: number,
  options: CudaDeviceNodeOptions = {},
): Promise<number | null> {
  if (!Number.isSafeInteger(device) || device < 0) {
    throw new InvalidArgumentError('device', device, 'a CUDA device ordinal (0, 1, ...)');
  }
  const hooks = options.cuda === undefined ? await loadCudaHooks() : options.cuda;
  if (hooks?.pciBusId === undefined) {
    throw new InvalidArgumentError(
      'cuda',
      hooks === null ? null : 'hooks without pciBusId',
      'CUDA hooks that give PCI bus ids: install @allot/cuda, or call nodeOfPciDevice(busId) with ' +
        'the bus id from `nvidia-smi --query-gpu=pci.bus_id --format=csv`',
    );
  }
  return nodeOfPciDevice(hooks.pciBusId(device), options);
}
