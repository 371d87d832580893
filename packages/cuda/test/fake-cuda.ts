/**
 * The fake CUDA library for tests: each call to `fakeCuda()` loads a fresh copy (its own state)
 * configured by the given settings, and returns the options that point @allot/cuda at it.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { cudaStatus } from '../src/devices';
import type { CudaLibraryOptions } from '../src/options';

export interface FakeCudaSettings {
  /** `ok`, `nodriver` (status 35) or `nodevice` (status 100). @defaultValue 'ok' */
  readonly mode?: 'ok' | 'nodriver' | 'nodevice';
  /** Device memory per device, in bytes. @defaultValue 1 GiB */
  readonly capacity?: number;
  readonly hostCapacity?: number;
  readonly devices?: number;
  /** Queries answered "not ready" before queued work completes. @defaultValue 0 */
  readonly queryLatency?: number;
  /** 13000 (default) or a CUDA 12 version such as 12080. */
  readonly runtimeVersion?: number;
  readonly highPointers?: boolean;
  readonly noPools?: boolean;
  readonly noVmm?: boolean;
}

const VARIABLES: Record<keyof FakeCudaSettings, string> = {
  mode: 'FAKE_CUDA_MODE',
  capacity: 'FAKE_CUDA_CAPACITY',
  hostCapacity: 'FAKE_CUDA_HOST_CAPACITY',
  devices: 'FAKE_CUDA_DEVICES',
  queryLatency: 'FAKE_CUDA_QUERY_LATENCY',
  runtimeVersion: 'FAKE_CUDA_RUNTIME_VERSION',
  highPointers: 'FAKE_CUDA_HIGH_POINTERS',
  noPools: 'FAKE_CUDA_NO_POOLS',
  noVmm: 'FAKE_CUDA_NO_VMM',
};

let copies = 0;

/** Path of the compiled fake (built by test/global-setup.ts). */
export function fakeLibraryPath(): string {
  const path = process.env.ALLOT_FAKE_CUDA_LIBRARY;
  if (!path)
    throw new Error(
      'ALLOT_FAKE_CUDA_LIBRARY is not set: run the tests through vitest (test/global-setup.ts builds the fake).',
    );
  return path;
}

/** A freshly loaded fake with `settings`; pass the result as options to any entry point. */
export function fakeCuda(
  settings: FakeCudaSettings = {},
): Required<Pick<CudaLibraryOptions, 'runtimePath' | 'driverPath'>> {
  const dir = join(fakeLibraryPath(), '..', 'copies');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `libcudart-fake-${process.pid}-${++copies}.so`);
  copyFileSync(fakeLibraryPath(), path);
  const saved = new Map<string, string | undefined>();
  for (const variable of Object.values(VARIABLES)) {
    saved.set(variable, process.env[variable]);
    delete process.env[variable];
  }
  for (const [key, value] of Object.entries(settings)) {
    if (value === undefined || value === false) continue;
    process.env[VARIABLES[key as keyof FakeCudaSettings]] = value === true ? '1' : String(value);
  }
  try {
    cudaStatus({ runtimePath: path }); // loads the copy now: it reads its settings when loaded
  } finally {
    for (const [variable, value] of saved) {
      if (value === undefined) delete process.env[variable];
      else process.env[variable] = value;
    }
  }
  return { runtimePath: path, driverPath: path };
}

export const KiB = 1024;
export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
