import { describe, expect, it } from 'vitest';
import { fakeCuda, MiB } from '../test/fake-cuda';
import { copyDeviceToHost, copyHostToDevice } from './copies';
import { deviceSource } from './device-source';
import { CudaError } from './errors';
import { pinnedSource, registerHostMemory } from './pinned-source';
import { createStream } from './streams';

describe('pinnedSource and registerHostMemory (fake CUDA)', () => {
  it('pinned regions are host memory with views, and copy to and from the device', () => {
    const cuda = fakeCuda();
    const pinned = pinnedSource(cuda);
    const device = deviceSource(cuda);
    const staging = pinned.acquire(10_000)!;
    expect(staging.size).toBe(12_288);
    const view = pinned.view(staging.address, 256);
    for (let i = 0; i < 256; i++) view[i] = i;
    const target = device.acquire(MiB)!;
    const stream = createStream(cuda);
    copyHostToDevice(target, view, { stream });
    const back = pinned.view(staging.address + 4096, 256);
    copyDeviceToHost(back, target, { stream });
    stream.synchronize();
    expect([...back]).toEqual([...view]);
    pinned.release(staging);
    expect(pinned.reservedBytes()).toBe(0);
    expect(pinned.acquire(2 * 1024 * MiB)).toBeNull(); // over the fake's 1 GiB of pinned memory
  });

  it("page-locks caller memory and unlocks it; twice is refused with CUDA's status", () => {
    const cuda = fakeCuda();
    const buffer = new Float64Array(1024);
    const registration = registerHostMemory(buffer, cuda);
    expect(registration.size).toBe(8192);
    let error: unknown;
    try {
      registerHostMemory(buffer, cuda);
    } catch (e) {
      error = e;
    }
    expect(CudaError.isInstance(error)).toBe(true);
    expect((error as CudaError).statusName).toBe('cudaErrorHostMemoryAlreadyRegistered');
    expect((error as CudaError).call).toBe('cudaHostRegister');
    registration.unregister();
    registration.unregister(); // idempotent
    {
      using again = registerHostMemory({ address: registration.address, size: 8192 }, cuda);
      expect(again.address).toBe(registration.address);
    }
    expect(() => registerHostMemory(buffer, cuda).unregister()).not.toThrow();
  });
});
