/**
 * Library discovery: the ordered list of places to look for the CUDA runtime and driver, and the
 * loading of the first that works. Nothing here runs at import time.
 *
 * Runtime (`libcudart.so.<major>`): the `runtimePath` option, else `ALLOT_CUDART_PATH` (either one,
 * when given, is the only candidate); else `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`,
 * `/usr/local/cuda/lib64`, `/usr/local/cuda-<version>/lib64` (newest first), then bare names for
 * the dynamic loader (`LD_LIBRARY_PATH`, `ldconfig`). Driver (`libcuda.so.1`): the `driverPath`
 * option, else `ALLOT_CUDA_DRIVER_PATH`, else the loader, then the usual system directories (never
 * the toolkit's `stubs/`, whose functions only fail).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { type CudaApi, type CudaAttempt, CudaUnavailableError } from '../errors';
import type { CudaLibraryOptions } from '../options';
import { type IKoffiLib, koffi } from './koffi';

export const RUNTIME_PATH_ENV = 'ALLOT_CUDART_PATH';
export const DRIVER_PATH_ENV = 'ALLOT_CUDA_DRIVER_PATH';

/** Runtime majors looked for, newest first. */
const RUNTIME_NAMES_LINUX = [
  'libcudart.so.13',
  'libcudart.so.12',
  'libcudart.so.11.0',
  'libcudart.so',
];
const RUNTIME_NAMES_WINDOWS = ['cudart64_13.dll', 'cudart64_12.dll', 'cudart64_110.dll'];
const DRIVER_NAMES_LINUX = ['libcuda.so.1'];
const DRIVER_DIRS_LINUX = [
  '/usr/lib/wsl/lib',
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
];
const DRIVER_NAMES_WINDOWS = ['nvcuda.dll'];

/** A place to look. */
export interface Candidate {
  readonly path: string;
  readonly origin: string;
  /** Absolute paths are checked for existence before the loader is asked. */
  readonly absolute: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

function envOf(options: CudaLibraryOptions): Env {
  return options.env ?? process.env;
}

function versionKey(name: string): number[] {
  return (name.match(/\d+/g) ?? []).map(Number);
}

/** `/usr/local/cuda`, then `/usr/local/cuda-<version>` from newest to oldest. */
function localToolkits(root = '/usr/local'): string[] {
  let names: string[];
  try {
    names = readdirSync(root).filter((n) => n === 'cuda' || n.startsWith('cuda-'));
  } catch {
    return [];
  }
  const versions = names.filter((n) => n !== 'cuda');
  versions.sort((a, b) => {
    const va = versionKey(a);
    const vb = versionKey(b);
    for (let i = 0; i < Math.max(va.length, vb.length); i++) {
      const d = (vb[i] ?? 0) - (va[i] ?? 0);
      if (d !== 0) return d;
    }
    return 0;
  });
  return [...(names.includes('cuda') ? ['cuda'] : []), ...versions].map((n) => join(root, n));
}

function dedupe(candidates: Candidate[]): Candidate[] {
  const seen = new Set<string>();
  return candidates.filter((c) => {
    if (seen.has(c.path)) return false;
    seen.add(c.path);
    return true;
  });
}

/** Where the runtime library is looked for, in order. */
export function runtimeCandidates(options: CudaLibraryOptions = {}): Candidate[] {
  if (options.runtimePath !== undefined) {
    return [
      {
        path: options.runtimePath,
        origin: 'runtimePath option',
        absolute: options.runtimePath.includes('/'),
      },
    ];
  }
  const env = envOf(options);
  const explicit = env[RUNTIME_PATH_ENV];
  if (explicit)
    return [{ path: explicit, origin: RUNTIME_PATH_ENV, absolute: explicit.includes('/') }];
  const windows = process.platform === 'win32';
  const names = windows ? RUNTIME_NAMES_WINDOWS : RUNTIME_NAMES_LINUX;
  const libDir = windows ? 'bin' : 'lib64';
  const out: Candidate[] = [];
  for (const variable of ['CUDA_HOME', 'CUDA_PATH']) {
    const home = env[variable];
    if (!home) continue;
    for (const name of names)
      out.push({ path: join(home, libDir, name), origin: variable, absolute: true });
  }
  if (!windows) {
    for (const toolkit of localToolkits()) {
      for (const name of names)
        out.push({
          path: join(toolkit, libDir, name),
          origin: 'toolkit directory',
          absolute: true,
        });
    }
  }
  for (const name of names) out.push({ path: name, origin: 'dynamic loader', absolute: false });
  return dedupe(out);
}

/** Where the driver library is looked for, in order. */
export function driverCandidates(options: CudaLibraryOptions = {}): Candidate[] {
  if (options.driverPath !== undefined) {
    return [
      {
        path: options.driverPath,
        origin: 'driverPath option',
        absolute: options.driverPath.includes('/'),
      },
    ];
  }
  const explicit = envOf(options)[DRIVER_PATH_ENV];
  if (explicit)
    return [{ path: explicit, origin: DRIVER_PATH_ENV, absolute: explicit.includes('/') }];
  if (process.platform === 'win32') {
    return DRIVER_NAMES_WINDOWS.map((name) => ({
      path: name,
      origin: 'dynamic loader',
      absolute: false,
    }));
  }
  const out: Candidate[] = DRIVER_NAMES_LINUX.map((name) => ({
    path: name,
    origin: 'dynamic loader',
    absolute: false,
  }));
  for (const dir of DRIVER_DIRS_LINUX) {
    for (const name of DRIVER_NAMES_LINUX)
      out.push({ path: join(dir, name), origin: 'system directory', absolute: true });
  }
  return dedupe(out);
}

/** A loaded library and where it came from. */
export interface LoadedLibrary {
  readonly lib: IKoffiLib;
  readonly path: string;
  /** Candidates tried before (and including) the one that loaded. */
  readonly attempts: CudaAttempt[];
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}

/**
 * Loads the first candidate that the loader accepts and that exports `probeSymbol`.
 * @throws CudaUnavailableError naming every candidate and its failure.
 */
export function loadFirst(
  api: CudaApi,
  candidates: readonly Candidate[],
  probeSymbol: string,
): LoadedLibrary {
  const attempts: CudaAttempt[] = [];
  for (const c of candidates) {
    if (c.absolute && !existsSync(c.path)) {
      attempts.push({ path: c.path, origin: c.origin, failure: 'not found' });
      continue;
    }
    let lib: IKoffiLib;
    try {
      lib = koffi().load(c.path);
    } catch (error) {
      attempts.push({ path: c.path, origin: c.origin, failure: firstLine(error) });
      continue;
    }
    try {
      lib.func(`int ${probeSymbol}(void)`);
    } catch {
      attempts.push({
        path: c.path,
        origin: c.origin,
        failure: `loaded, but it does not export ${probeSymbol}`,
      });
      continue;
    }
    attempts.push({ path: c.path, origin: c.origin, failure: 'loaded' });
    return { lib, path: c.path, attempts };
  }
  const what =
    api === 'runtime'
      ? 'the CUDA runtime library (libcudart)'
      : 'the CUDA driver library (libcuda)';
  throw new CudaUnavailableError(`CUDA is not available: could not load ${what}.`, {
    api,
    attempts,
    envVariable: api === 'runtime' ? RUNTIME_PATH_ENV : DRIVER_PATH_ENV,
    hint:
      api === 'runtime'
        ? 'Install the CUDA toolkit or the nvidia-cuda-runtime package, or set CUDA_HOME.'
        : 'The driver library comes with the NVIDIA driver; it is absent on machines without one.',
  });
}
