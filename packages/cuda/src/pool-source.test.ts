import { OutOfMemoryError, UnsupportedError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { fakeCuda, MiB } from '../test/fake-cuda';
import { memoryPoolSource } from './pool-source';
import { createStream, defaultStream } from './streams';

describe('memoryPoolSource (fake CUDA)', () => {
  it('acquires with cudaMallocFromPoolAsync and releases with cudaFreeAsync', () => {
    const cuda = fakeCuda({ capacity: 256 * MiB });
    const source = memoryPoolSource({ ...cuda, releaseThreshold: 32 * MiB });
    expect(source.kind).toBe('cuda-pool');
    const a = source.acquire(20 * MiB)!;
    const b = source.acquire(10 * MiB)!;
    expect(source.reservedBytes()).toBe(30 * MiB);
    expect(source.poolUsedBytes()).toBe(30 * MiB);
    source.release(a);
    source.release(b);
    expect(source.reservedBytes()).toBe(0);
    expect(source.poolUsedBytes()).toBe(30 * MiB); // the frees are queued on the legacy stream
    defaultStream(cuda).synchronize();
    expect(source.poolUsedBytes()).toBe(0);
    expect(source.poolReservedBytes()).toBeLessThanOrEqual(32 * MiB);
    source.trimTo(0);
    expect(source.poolReservedBytes()).toBe(0);
    expect(source.memoryInfo().free).toBe(256 * MiB);
    source.dispose();
  });

  it('allocates and frees on any stream', () => {
    const cuda = fakeCuda();
    const source = memoryPoolSource(cuda);
    const stream = createStream(cuda);
    const address = source.allocateAsync(MiB, stream);
    expect(source.poolUsedBytes()).toBe(MiB);
    source.freeAsync(address, stream);
    expect(source.poolUsedBytes()).toBe(MiB); // queued, not yet done
    stream.synchronize();
    expect(source.poolUsedBytes()).toBe(0);
    stream.destroy();
  });

  it('returns null when the device is full; allocateAsync throws OutOfMemoryError', () => {
    const cuda = fakeCuda({ capacity: 16 * MiB });
    const source = memoryPoolSource(cuda);
    expect(source.acquire(32 * MiB)).toBeNull();
    expect(() => source.allocateAsync(32 * MiB)).toThrow(OutOfMemoryError);
  });

  it('the device default pool', () => {
    const source = memoryPoolSource({
      ...fakeCuda(),
      useDefaultPool: true,
      releaseThreshold: Infinity,
    });
    const r = source.acquire(MiB)!;
    source.release(r);
    source.dispose();
  });

  it('refuses a device without memory pools', () => {
    expect(() => memoryPoolSource(fakeCuda({ noPools: true }))).toThrow(UnsupportedError);
  });
});
