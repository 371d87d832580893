import { describe, expect, it } from 'vitest';
import { fakeLibraryPath } from '../../test/fake-cuda';
import { CudaUnavailableError } from '../errors';
import { driverCandidates, loadFirst, runtimeCandidates } from './discovery';

describe('library discovery', () => {
  it('an explicit option is the only candidate', () => {
    expect(
      runtimeCandidates({
        runtimePath: '/opt/x/libcudart.so.12',
        env: { ALLOT_CUDART_PATH: '/y' },
      }),
    ).toEqual([{ path: '/opt/x/libcudart.so.12', origin: 'runtimePath option', absolute: true }]);
    expect(driverCandidates({ driverPath: 'libcuda.so.1' })).toEqual([
      { path: 'libcuda.so.1', origin: 'driverPath option', absolute: false },
    ]);
  });

  it('then the environment variable alone', () => {
    expect(
      runtimeCandidates({ env: { ALLOT_CUDART_PATH: '/y/libcudart.so', CUDA_HOME: '/c' } }),
    ).toEqual([{ path: '/y/libcudart.so', origin: 'ALLOT_CUDART_PATH', absolute: true }]);
    expect(driverCandidates({ env: { ALLOT_CUDA_DRIVER_PATH: '/d/libcuda.so.1' } })).toEqual([
      { path: '/d/libcuda.so.1', origin: 'ALLOT_CUDA_DRIVER_PATH', absolute: true },
    ]);
  });

  it('then CUDA_HOME, CUDA_PATH, /usr/local/cuda*, and the loader, newest major first', () => {
    const list = runtimeCandidates({ env: { CUDA_HOME: '/h', CUDA_PATH: '/p' } });
    const paths = list.map((c) => c.path);
    expect(paths.slice(0, 4)).toEqual([
      '/h/lib64/libcudart.so.13',
      '/h/lib64/libcudart.so.12',
      '/h/lib64/libcudart.so.11.0',
      '/h/lib64/libcudart.so',
    ]);
    expect(paths[4]).toBe('/p/lib64/libcudart.so.13');
    const loader = list.filter((c) => c.origin === 'dynamic loader').map((c) => c.path);
    expect(loader).toEqual([
      'libcudart.so.13',
      'libcudart.so.12',
      'libcudart.so.11.0',
      'libcudart.so',
    ]);
    expect(list.findIndex((c) => c.origin === 'dynamic loader')).toBeGreaterThan(
      list.findLastIndex((c) => c.origin !== 'dynamic loader'),
    );
    expect(new Set(paths).size).toBe(paths.length);
  });

  it('the driver: the loader, then system directories, never the toolkit stubs', () => {
    const paths = driverCandidates({ env: {} }).map((c) => c.path);
    expect(paths[0]).toBe('libcuda.so.1');
    expect(paths.some((p) => p.includes('stubs'))).toBe(false);
  });

  it('loadFirst names every candidate and its failure', () => {
    let error: unknown;
    try {
      loadFirst(
        'runtime',
        [
          { path: '/missing/libcudart.so.13', origin: 'CUDA_HOME', absolute: true },
          { path: 'libdefinitely-not-here.so.7', origin: 'dynamic loader', absolute: false },
          { path: fakeLibraryPath(), origin: 'test', absolute: true },
        ],
        'cudaNoSuchSymbol',
      );
    } catch (e) {
      error = e;
    }
    expect(CudaUnavailableError.isInstance(error)).toBe(true);
    const attempts = (error as CudaUnavailableError).attempts;
    expect(attempts[0]).toEqual({
      path: '/missing/libcudart.so.13',
      origin: 'CUDA_HOME',
      failure: 'not found',
    });
    expect(attempts[1]?.failure).toMatch(/cannot open shared object file/);
    expect(attempts[2]?.failure).toBe('loaded, but it does not export cudaNoSuchSymbol');
    expect((error as Error).message).toContain('/missing/libcudart.so.13 (CUDA_HOME): not found');
  });

  it('loadFirst returns the first library that works', () => {
    const loaded = loadFirst(
      'runtime',
      [
        { path: '/missing/libcudart.so.13', origin: 'CUDA_HOME', absolute: true },
        { path: fakeLibraryPath(), origin: 'test', absolute: true },
      ],
      'cudaGetDeviceCount',
    );
    expect(loaded.path).toBe(fakeLibraryPath());
    expect(loaded.attempts.map((a) => a.failure)).toEqual(['not found', 'loaded']);
  });
});
