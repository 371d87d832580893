/**
 * The GPU suite: the same entry points against the real CUDA runtime, driver and device.
 * Runs with `pnpm test:gpu` (ALLOT_CUDA_GPU=1) on a machine with an NVIDIA GPU; skipped otherwise.
 */
import { OutOfMemoryError } from '@allot/core';
import { describeConformance } from '@allot/testkit/vitest';
import { describe, expect, it } from 'vitest';
import { cachingDeviceAllocator } from './caching-device-allocator';
import { copyDeviceToDevice, copyDeviceToHost, copyHostToDevice } from './copies';
import { deviceSource } from './device-source';
import { devices, isAvailable } from './devices';
import { expandableSource } from './expandable-source';
import { managedSource } from './managed-source';
import { pinnedSource, registerHostMemory } from './pinned-source';
import { memoryPoolSource } from './pool-source';
import { createStream } from './streams';

const MiB = 1024 * 1024;
const enabled = process.env.ALLOT_CUDA_GPU === '1' && isAvailable();

describe.skipIf(!enabled)('on a real GPU', () => {
  it('lists the devices', () => {
    const list = devices();
    expect(list.length).toBeGreaterThan(0);
    for (const d of list) {
      expect(d.name.length).toBeGreaterThan(0);
      expect(d.totalMemory).toBeGreaterThan(0);
      expect(d.pciBusId).toMatch(/^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$/);
      expect(d.computeCapability.major).toBeGreaterThanOrEqual(3);
    }
  });

  it('round trips data through device memory, synchronously and on a stream', () => {
    const source = deviceSource();
    const a = source.acquire(64 * MiB)!;
    const b = source.acquire(64 * MiB)!;
    const data = new Float64Array(8 * MiB).map((_, i) => i * 1.25);
    copyHostToDevice(a, data);
    copyDeviceToDevice(b, a, data.byteLength);
    const back = new Float64Array(8 * MiB);
    copyDeviceToHost(back, b);
    expect(Buffer.from(back.buffer).equals(Buffer.from(data.buffer))).toBe(true);
    const stream = createStream();
    const pinned = pinnedSource();
    const staging = pinned.acquire(data.byteLength)!;
    copyDeviceToHost(staging.bytes, a, { stream });
    stream.synchronize();
    expect(Buffer.from(staging.bytes).equals(Buffer.from(data.buffer))).toBe(true);
    const registration = registerHostMemory(back);
    copyDeviceToHost(back, a, { stream });
    stream.synchronize();
    registration.unregister();
    pinned.dispose();
    source.dispose();
    stream.destroy();
  });

  it('stream-ordered pools reuse memory on the stream', () => {
    const stream = createStream();
    const source = memoryPoolSource({ stream, releaseThreshold: 256 * MiB });
    const a = source.allocateAsync(32 * MiB, stream);
    source.freeAsync(a, stream);
    const b = source.allocateAsync(32 * MiB, stream);
    source.freeAsync(b, stream);
    stream.synchronize();
    expect(source.poolUsedBytes()).toBe(0);
    expect(source.poolReservedBytes()).toBeGreaterThan(0);
    source.trimTo(0);
    source.dispose();
  });

  it('managed memory: host writes, prefetch, advice, device reads', () => {
    const source = managedSource();
    const region = source.acquire(4 * MiB)!;
    region.bytes.fill(42);
    source.advise(region.address, region.size, 'preferredLocation', 0);
    source.prefetch(region.address, region.size, 0);
    const out = new Uint8Array(16);
    copyDeviceToHost(out, region);
    expect([...out]).toEqual(new Array(16).fill(42));
    source.dispose();
  });

  it('expandable segments grow in place, with data intact', () => {
    const source = expandableSource({ maxRegionSize: 1024 * MiB });
    const region = source.acquire(2 * MiB)!;
    const address = region.address;
    expect(source.grow(region, 200 * MiB)).toBe(true);
    expect(region.address).toBe(address);
    const data = new Uint8Array(8 * MiB).map((_, i) => i % 253);
    copyHostToDevice(region, data, { offset: 190 * MiB });
    const back = new Uint8Array(8 * MiB);
    copyDeviceToHost(back, region, { offset: 190 * MiB });
    expect(Buffer.from(back).equals(Buffer.from(data))).toBe(true);
    source.dispose();
  });

  it('out of memory on the device is null, then OutOfMemoryError with the figures', () => {
    const source = deviceSource();
    const { total } = source.memoryInfo();
    expect(source.acquire(total * 2)).toBeNull();
    expect(() => source.acquireOrThrow(total * 2)).toThrow(OutOfMemoryError);
    const allocator = cachingDeviceAllocator();
    expect(() => allocator.allocateOrThrow(total * 2)).toThrow(/Tried to allocate/);
    allocator.dispose();
  });

  it('recordStream defers reuse until the other stream is done', () => {
    const allocator = cachingDeviceAllocator();
    const one = createStream();
    const two = createStream();
    const a = allocator.allocateOn(one.handle, 8 * MiB)!;
    allocator.copyFromHost(a, new Uint8Array(8 * MiB), { stream: two });
    allocator.recordStream(a, two.handle);
    allocator.free(a);
    two.synchronize();
    allocator.processEvents();
    expect(allocator.allocateOn(one.handle, 8 * MiB)).toBe(a);
  });
});

if (enabled) {
  const capabilities = {
    deterministic: false,
    restoresInitialUsage: false,
    coalesces: true,
    maxRequestSize: 3 * MiB,
    alignments: [1, 8, 64, 512, 4096],
  } as const;
  describeConformance({
    name: 'cachingDeviceAllocator on a real GPU',
    create: () => cachingDeviceAllocator({ config: '', limit: 64 * MiB }),
    capabilities,
  });
  describeConformance({
    name: 'cachingDeviceAllocator (expandable_segments:True) on a real GPU',
    create: () => cachingDeviceAllocator({ config: 'expandable_segments:True', limit: 64 * MiB }),
    capabilities,
  });
}
