/**
 * Without a usable CUDA: the real runtime on a machine with no driver (when the toolkit is
 * installed), a missing library, and the fake's no-driver and no-device modes. Every entry point
 * fails with CudaUnavailableError naming what was tried; isAvailable, devices and cudaStatus never throw.
 */
import { existsSync } from 'node:fs';
import { UnsupportedError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { fakeCuda } from '../test/fake-cuda';
import { cachingDeviceAllocator } from './caching-device-allocator';
import { copyDeviceToHost, copyHostToDevice } from './copies';
import { deviceSource } from './device-source';
import { cudaStatus, devices, isAvailable } from './devices';
import { CudaUnavailableError } from './errors';
import { expandableSource } from './expandable-source';
import { runtimeCandidates } from './ffi/discovery';
import { managedSource } from './managed-source';
import type { CudaLibraryOptions } from './options';
import { pinnedSource, registerHostMemory } from './pinned-source';
import { memoryPoolSource } from './pool-source';
import { createEvent, createStream, defaultStream } from './streams';

const REAL_RUNTIME = '/usr/local/cuda/lib64/libcudart.so.13';

function everyEntryPoint(options: CudaLibraryOptions): Array<[string, () => unknown]> {
  return [
    ['deviceSource', () => deviceSource(options)],
    ['memoryPoolSource', () => memoryPoolSource(options)],
    ['managedSource', () => managedSource(options)],
    ['pinnedSource', () => pinnedSource(options)],
    ['expandableSource', () => expandableSource(options)],
    ['registerHostMemory', () => registerHostMemory(new Uint8Array(4096), options)],
    ['createStream', () => createStream(options)],
    ['defaultStream', () => defaultStream(options)],
    ['createEvent', () => createEvent(options)],
    ['cachingDeviceAllocator', () => cachingDeviceAllocator(options)],
    [
      'cachingDeviceAllocator (expandable_segments)',
      () => cachingDeviceAllocator({ ...options, config: 'expandable_segments:True' }),
    ],
    [
      'copyHostToDevice',
      () => copyHostToDevice({ address: 4096, size: 16 }, new Uint8Array(16), options),
    ],
    [
      'copyDeviceToHost',
      () => copyDeviceToHost(new Uint8Array(16), { address: 4096, size: 16 }, options),
    ],
  ];
}

function expectUnavailable(options: CudaLibraryOptions, pattern: RegExp): void {
  expect(isAvailable(options)).toBe(false);
  expect(devices(options)).toEqual([]);
  const status = cudaStatus(options);
  expect(status.available).toBe(false);
  expect(status.error?.message).toMatch(pattern);
  for (const [name, call] of everyEntryPoint(options)) {
    let error: unknown;
    try {
      call();
    } catch (e) {
      error = e;
    }
    expect(CudaUnavailableError.isInstance(error), name).toBe(true);
    expect(UnsupportedError.isInstance(error), name).toBe(true);
    expect((error as Error).message, name).toMatch(pattern);
    expect((error as Error).message, name).toContain('Tried:');
  }
}

describe('CUDA unavailable', () => {
  it.skipIf(!existsSync(REAL_RUNTIME))(
    'the real runtime without a driver: status 35, every entry point fails clearly',
    () => {
      const options = { runtimePath: REAL_RUNTIME };
      expectUnavailable(options, /cudaErrorInsufficientDriver \(35\)/);
      const error = cudaStatus(options).error as CudaUnavailableError;
      expect(error.status).toBe(35);
      expect(error.loadedPath).toBe(REAL_RUNTIME);
      expect(error.attempts).toEqual([
        {
          path: REAL_RUNTIME,
          origin: 'runtimePath option',
          failure: expect.stringContaining(
            'cudaGetDeviceCount returned cudaErrorInsufficientDriver',
          ),
        },
      ]);
      expect(error.message).toContain('no NVIDIA driver is installed');
    },
  );

  it('a library that does not exist: the path, its origin and "not found"', () => {
    const options = { runtimePath: '/nonexistent/libcudart.so.13' };
    expectUnavailable(options, /could not load the CUDA runtime library/);
    const error = cudaStatus(options).error as CudaUnavailableError;
    expect(error.attempts).toEqual([
      { path: '/nonexistent/libcudart.so.13', origin: 'runtimePath option', failure: 'not found' },
    ]);
    expect(error.message).toContain('ALLOT_CUDART_PATH');
  });

  it('a file that is not a loadable library: the loader says why', () => {
    const options = { runtimePath: import.meta.filename };
    const error = cudaStatus(options).error as CudaUnavailableError;
    expect(error.attempts[0]?.failure).not.toBe('not found');
    expect(error.attempts[0]?.failure).not.toBe('loaded');
  });

  it('the fake without a driver (status 35)', () => {
    expectUnavailable(fakeCuda({ mode: 'nodriver' }), /cudaErrorInsufficientDriver \(35\)/);
  });

  it('the fake without a device (status 100)', () => {
    expectUnavailable(fakeCuda({ mode: 'nodevice' }), /cudaErrorNoDevice \(100\)/);
  });

  it('discovery with nothing to find lists every place it looked', () => {
    const options = { env: { CUDA_HOME: '/nonexistent/cuda-home' } };
    const candidates = runtimeCandidates(options).map((c) => c.path);
    expect(candidates[0]).toBe('/nonexistent/cuda-home/lib64/libcudart.so.13');
    expect(candidates).toContain('libcudart.so.13');
  });
});
