import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from './errors';
import { hostSource } from './host-source';

describe('hostSource', () => {
  it('assigns disjoint addresses above 2^32 and gives views of the bytes', () => {
    const source = hostSource();
    const a = source.acquire(5000)!;
    const b = source.acquire(100)!;
    expect(a.address).toBeGreaterThanOrEqual(2 ** 32);
    expect(a.size).toBe(8192); // rounded to the 4 KiB granularity
    expect(b.address).toBeGreaterThanOrEqual(a.address + a.size);
    source.view(a.address + 10, 4).set([1, 2, 3, 4]);
    expect([...a.bytes.subarray(10, 14)]).toEqual([1, 2, 3, 4]);
    expect(source.reservedBytes()).toBe(8192 + 4096);
    source.release(a);
    expect(source.reservedBytes()).toBe(4096);
    expect(source.regions()).toEqual([b]);
  });

  it('says clearly when an address belongs to no region', () => {
    const source = hostSource();
    const a = source.acquire(4096)!;
    expect(() => source.view(a.address - 1, 1)).toThrow(/no region|inside a live region/);
    expect(() => source.view(a.address + 4000, 200)).toThrow(InvalidArgumentError);
    source.release(a);
    expect(() => source.view(a.address, 1)).toThrow(InvalidArgumentError);
    expect(() => source.release(a)).toThrow(InvalidArgumentError);
  });

  it('honours its limit and validates sizes', () => {
    const source = hostSource({ limit: 8192 });
    expect(source.acquire(8192)).not.toBeNull();
    expect(source.acquire(1)).toBeNull();
    expect(() => source.acquire(0)).toThrow(InvalidArgumentError);
    expect(() => hostSource({ granularity: 1000 })).toThrow(InvalidArgumentError);
  });

  it('backs regions with SharedArrayBuffer when asked', () => {
    const region = hostSource({ shared: true }).acquire(4096)!;
    expect(region.buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it('grows regions in place when growable', () => {
    const source = hostSource({ growable: true, maxRegionSize: 1 << 20 });
    const region = source.acquire(4096)!;
    source.view(region.address, 1)[0] = 42;
    expect(source.grow!(region, 3 * 4096)).toBe(true);
    expect(region.size).toBe(3 * 4096);
    expect(source.view(region.address, 1)[0]).toBe(42);
    expect(source.view(region.address + 2 * 4096, 4096).length).toBe(4096);
    expect(source.grow!(region, 2 << 20)).toBe(false);
    expect(source.reservedBytes()).toBe(3 * 4096);
    const next = source.acquire(4096)!;
    expect(next.address).toBeGreaterThanOrEqual(region.address + (1 << 20));
  });

  it('is not growable by default', () => {
    expect(hostSource().grow).toBeUndefined();
  });
});
