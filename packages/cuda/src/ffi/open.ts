/**
 * Opening CUDA, lazily and once per library: the runtime is loaded on the first call that needs it
 * and probed with `cudaGetDeviceCount`; a library that loads on a machine without a driver (status
 * 35, `cudaErrorInsufficientDriver`) or without a device (100) makes CUDA unavailable, with an error
 * that names what was tried. Results, failures included, are kept per discovery input, so asking
 * again costs a map lookup.
 */
import { type CudaAttempt, CudaUnavailableError } from '../errors';
import type { CudaLibraryOptions } from '../options';
import {
  DRIVER_PATH_ENV,
  driverCandidates,
  loadFirst,
  RUNTIME_PATH_ENV,
  runtimeCandidates,
} from './discovery';
import { DriverLibrary } from './driver';
import { RuntimeLibrary, SUCCESS } from './runtime';

/** A usable runtime: loaded, with a driver and at least one device. */
export interface OpenRuntime {
  readonly runtime: RuntimeLibrary;
  readonly deviceCount: number;
}

type Outcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: Error };

const runtimes = new Map<string, Outcome<OpenRuntime>>();
const drivers = new Map<string, Outcome<DriverLibrary>>();

function env(options: CudaLibraryOptions): Readonly<Record<string, string | undefined>> {
  return options.env ?? process.env;
}

function runtimeKey(options: CudaLibraryOptions): string {
  const e = env(options);
  return JSON.stringify([options.runtimePath, e[RUNTIME_PATH_ENV], e.CUDA_HOME, e.CUDA_PATH]);
}

function driverKey(options: CudaLibraryOptions): string {
  return JSON.stringify([runtimeKey(options), options.driverPath, env(options)[DRIVER_PATH_ENV]]);
}

function why(status: number): string {
  switch (status) {
    case 35:
      return 'no NVIDIA driver is installed, or it is older than this runtime (a machine with the toolkit but no GPU)';
    case 100:
      return 'the driver sees no CUDA-capable device';
    case 34:
      return 'the driver library is the toolkit stub, not a real driver';
    default:
      return 'CUDA could not be initialised';
  }
}

function openRuntimeUncached(options: CudaLibraryOptions): OpenRuntime {
  const loaded = loadFirst('runtime', runtimeCandidates(options), 'cudaGetDeviceCount');
  const runtime = new RuntimeLibrary(loaded.lib, loaded.path);
  const probe = runtime.probe();
  if (probe.status !== SUCCESS || probe.count === 0) {
    const statusText =
      probe.status === SUCCESS
        ? 'reported 0 devices'
        : `returned ${runtime.statusName(probe.status)} (${probe.status}): ${runtime.statusDescription(probe.status)}`;
    const attempts: CudaAttempt[] = loaded.attempts.map((a) =>
      a.path === loaded.path
        ? { ...a, failure: `loaded (runtime ${runtime.version}); cudaGetDeviceCount ${statusText}` }
        : a,
    );
    throw new CudaUnavailableError(
      `CUDA is not available: ${loaded.path} loaded, but cudaGetDeviceCount ${statusText}; ${why(probe.status === SUCCESS ? 100 : probe.status)}.`,
      {
        api: 'runtime',
        attempts,
        envVariable: RUNTIME_PATH_ENV,
        status: probe.status,
        loadedPath: loaded.path,
        hint: `Driver version reported: ${runtime.driverVersion() || 'none'}.`,
      },
    );
  }
  return { runtime, deviceCount: probe.count };
}

/**
 * The runtime for `options`, loaded and probed.
 * @throws CudaUnavailableError when no library loads, or CUDA has no driver or no device.
 */
export function openRuntime(options: CudaLibraryOptions = {}): OpenRuntime {
  const key = runtimeKey(options);
  let outcome = runtimes.get(key);
  if (outcome === undefined) {
    try {
      outcome = { ok: true, value: openRuntimeUncached(options) };
    } catch (error) {
      outcome = { ok: false, error: error as Error };
    }
    runtimes.set(key, outcome);
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/**
 * The driver for `options` (loaded after the runtime, and `cuInit` called).
 * @throws CudaUnavailableError when the runtime or the driver cannot be used.
 */
export function openDriver(options: CudaLibraryOptions = {}): DriverLibrary {
  const { runtime } = openRuntime(options);
  const key = driverKey(options);
  let outcome = drivers.get(key);
  if (outcome === undefined) {
    try {
      const loaded = loadFirst('driver', driverCandidates(options), 'cuMemCreate');
      const driver = new DriverLibrary(loaded.lib, loaded.path, (device) =>
        runtime.memoryInfo(device),
      );
      const status = driver.probe();
      if (status !== SUCCESS) {
        throw new CudaUnavailableError(
          `The CUDA driver API is not available: ${loaded.path} loaded, but cuInit returned ${driver.statusName(status)} (${status}); ${why(status)}.`,
          {
            api: 'driver',
            attempts: loaded.attempts,
            envVariable: DRIVER_PATH_ENV,
            status,
            loadedPath: loaded.path,
          },
        );
      }
      outcome = { ok: true, value: driver };
    } catch (error) {
      outcome = { ok: false, error: error as Error };
    }
    drivers.set(key, outcome);
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
