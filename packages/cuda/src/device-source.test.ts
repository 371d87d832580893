import { InvalidArgumentError, OutOfMemoryError, UnsupportedError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { fakeCuda, GiB, MiB } from '../test/fake-cuda';
import { deviceSource } from './device-source';
import { CudaError } from './errors';

describe('deviceSource (fake CUDA)', () => {
  it('acquires and releases device memory through cudaMalloc and cudaFree', () => {
    const cuda = fakeCuda({ capacity: GiB });
    const source = deviceSource(cuda);
    expect(source.kind).toBe('cuda-device');
    expect(source.hostAccessible).toBe(false);
    expect(source.totalMemory).toBe(GiB);
    const a = source.acquire(1000)!;
    const b = source.acquire(2 * MiB)!;
    expect(a.size).toBe(1024);
    expect(a.address % 512).toBe(0);
    expect(a.address).not.toBe(b.address);
    expect(Number.isSafeInteger(a.address)).toBe(true);
    expect(source.reservedBytes()).toBe(1024 + 2 * MiB);
    expect(source.memoryInfo()).toEqual({ free: GiB - 1024 - 2 * MiB, total: GiB });
    source.release(a);
    source.release(b);
    expect(source.reservedBytes()).toBe(0);
    expect(source.memoryInfo().free).toBe(GiB);
  });

  it('returns null when the device is out of memory, and acquireOrThrow explains it', () => {
    const source = deviceSource(fakeCuda({ capacity: 64 * MiB }));
    const held = source.acquire(48 * MiB)!;
    expect(source.acquire(32 * MiB)).toBeNull();
    let error: unknown;
    try {
      source.acquireOrThrow(32 * MiB);
    } catch (e) {
      error = e;
    }
    expect(OutOfMemoryError.isInstance(error)).toBe(true);
    const oom = error as OutOfMemoryError;
    expect(oom.requested).toBe(32 * MiB);
    expect(oom.capacity).toBe(64 * MiB);
    expect(oom.freeBytes).toBe(16 * MiB);
    expect(oom.reason).toBe('exhaustion');
    expect(oom.message).toContain(
      'cudaMalloc(size=33554432) failed: cudaErrorMemoryAllocation (2): out of memory',
    );
    expect(CudaError.isInstance(oom.cause)).toBe(true);
    // Out of memory is not sticky: the next call succeeds.
    source.release(held);
    expect(source.acquire(32 * MiB)).not.toBeNull();
  });

  it('honours its limit and refuses foreign regions without changing anything', () => {
    const source = deviceSource({ ...fakeCuda(), limit: 4 * MiB });
    const r = source.acquire(3 * MiB)!;
    expect(source.acquire(2 * MiB)).toBeNull();
    expect(() => source.release({ address: r.address + 512, size: 512, device: 0 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => source.acquire(0)).toThrow(InvalidArgumentError);
    expect(source.reservedBytes()).toBe(3 * MiB);
    source.dispose();
    expect(source.reservedBytes()).toBe(0);
  });

  it('refuses a device pointer at or above 2^53, and gives the memory back', () => {
    const source = deviceSource(fakeCuda({ highPointers: true, capacity: 64 * MiB }));
    expect(() => source.acquire(MiB)).toThrow(UnsupportedError);
    expect(() => source.acquire(MiB)).toThrow(/not below 2\^53/);
    expect(source.memoryInfo().free).toBe(64 * MiB);
  });

  it('checks the device ordinal', () => {
    expect(() => deviceSource({ ...fakeCuda({ devices: 2 }), device: 2 })).toThrow(
      InvalidArgumentError,
    );
    expect(deviceSource({ ...fakeCuda({ devices: 2 }), device: 1 }).device).toBe(1);
  });
});
