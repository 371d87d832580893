import { InvalidArgumentError, UnsupportedError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { fakeCuda, MiB } from '../test/fake-cuda';
import { cachingDeviceAllocator } from './caching-device-allocator';
import { copyDeviceToHost, copyHostToDevice } from './copies';
import { expandableSource } from './expandable-source';

describe('expandableSource (fake CUDA, driver VMM API)', () => {
  it('maps whole granules and grows in place, with data intact across pieces', () => {
    const cuda = fakeCuda({ capacity: 256 * MiB });
    const source = expandableSource({ ...cuda, maxRegionSize: 64 * MiB });
    expect(source.kind).toBe('cuda-expandable');
    expect(source.granularity).toBe(2 * MiB);
    const region = source.acquire(3 * MiB)!;
    expect(region.size).toBe(4 * MiB);
    expect(region.reserved).toBe(64 * MiB);
    const address = region.address;
    expect(source.grow(region, 9 * MiB)).toBe(true);
    expect(region.address).toBe(address);
    expect(region.size).toBe(10 * MiB);
    expect(source.reservedBytes()).toBe(10 * MiB);
    expect(source.memoryInfo().free).toBe(246 * MiB);
    // A copy that straddles the first and the second piece.
    const data = new Uint8Array(2 * MiB).map((_, i) => i % 251);
    copyHostToDevice(region, data, { ...cuda, offset: 3 * MiB });
    const back = new Uint8Array(2 * MiB);
    copyDeviceToHost(back, region, { ...cuda, offset: 3 * MiB });
    expect(Buffer.from(back.buffer).equals(Buffer.from(data.buffer))).toBe(true);
    expect(source.grow(region, 10 * MiB)).toBe(true); // already that large
    expect(source.grow(region, 65 * MiB)).toBe(false); // beyond the reservation
    source.release(region);
    expect(source.reservedBytes()).toBe(0);
    expect(source.memoryInfo().free).toBe(256 * MiB);
  });

  it('refuses growth and acquisition when the device is out of memory', () => {
    const source = expandableSource({
      ...fakeCuda({ capacity: 16 * MiB }),
      maxRegionSize: 64 * MiB,
    });
    const region = source.acquire(8 * MiB)!;
    expect(source.grow(region, 32 * MiB)).toBe(false);
    expect(region.size).toBe(8 * MiB);
    expect(source.acquire(10 * MiB)).toBeNull();
    expect(() => source.acquireOrThrow(10 * MiB)).toThrow(/cuMemCreate could not map/);
    expect(() => source.grow({ ...region }, 10 * MiB)).toThrow(InvalidArgumentError);
    source.dispose();
    expect(source.memoryInfo().free).toBe(16 * MiB);
  });

  it('refuses a device without virtual memory management', () => {
    expect(() => expandableSource(fakeCuda({ noVmm: true }))).toThrow(UnsupportedError);
  });

  it('backs the caching allocator when expandable_segments:True, and falls back without VMM', () => {
    const withVmm = cachingDeviceAllocator({ ...fakeCuda(), config: 'expandable_segments:True' });
    expect(withVmm.expandableSegments).toBe(true);
    const a = withVmm.allocate(30 * MiB)!;
    const b = withVmm.allocate(30 * MiB)!;
    expect(withVmm.layout().segments.length).toBe(1); // one segment, grown in place
    withVmm.free(a);
    withVmm.free(b);
    withVmm.dispose();
    const without = cachingDeviceAllocator({
      ...fakeCuda({ noVmm: true }),
      config: 'expandable_segments:True',
    });
    expect(without.expandableSegments).toBe(false);
    expect(without.deviceMemory.kind).toBe('cuda-device');
  });
});
