import { InvalidArgumentError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { fakeCuda, MiB } from '../test/fake-cuda';
import { copyDeviceToHost } from './copies';
import { managedSource } from './managed-source';
import { createStream } from './streams';

describe.each([
  ['CUDA 13 (cudaMemLocation by value)', 13000],
  ['CUDA 12 (int device)', 12080],
])('managedSource on %s (fake CUDA)', (_name, runtimeVersion) => {
  it('is host-accessible, and prefetch and advice reach the runtime in its own signature', () => {
    const cuda = fakeCuda({ runtimeVersion, devices: 2 });
    const source = managedSource(cuda);
    expect(source.kind).toBe('cuda-managed');
    expect(source.hostAccessible).toBe(true);
    const region = source.acquire(MiB)!;
    source.view(region.address, 4).set([1, 2, 3, 4]);
    expect(region.bytes[3]).toBe(4);
    const stream = createStream(cuda);
    source.prefetch(region.address, MiB, 0, stream);
    source.prefetch(region.address, 4096, 'host');
    source.prefetch(region.address, 4096, 1);
    source.advise(region.address, MiB, 'readMostly');
    source.advise(region.address, MiB, 'preferredLocation', 'host');
    source.advise(region.address, MiB, 'accessedBy', 1);
    stream.synchronize();
    // Managed memory is also device memory: copies see the host's writes.
    const out = new Uint8Array(4);
    copyDeviceToHost(out, region, cuda);
    expect([...out]).toEqual([1, 2, 3, 4]);
    expect(() => source.prefetch(region.address, 2 * MiB, 0)).toThrow(InvalidArgumentError);
    expect(() => source.prefetch(region.address, 4096, 2)).toThrow(/cudaErrorInvalidDevice/);
    expect(() => source.advise(region.address, 4096, 'nonsense' as 'readMostly')).toThrow(
      InvalidArgumentError,
    );
    source.release(region);
    expect(source.reservedBytes()).toBe(0);
  });
});
