import { describe, expect, it } from 'vitest';
import { addressSource } from './address-source';

describe('addressSource', () => {
  it('hands out disjoint, rounded regions and counts reserved bytes and their peak', () => {
    const source = addressSource({ granularity: 4096 });
    const a = source.acquire(5000)!;
    const b = source.acquire(2 ** 40)!; // a TiB of addresses, no memory
    expect(a.size).toBe(8192);
    expect(b.address).toBeGreaterThanOrEqual(a.address + a.size);
    expect(source.reservedBytes()).toBe(8192 + 2 ** 40);
    source.release(b);
    expect(source.reservedBytes()).toBe(8192);
    expect(source.peakReservedBytes()).toBe(8192 + 2 ** 40);
    expect([source.acquireCount, source.releaseCount, source.liveRegionCount]).toEqual([2, 1, 1]);
    expect(source.hostAccessible).toBe(false);
  });

  it('refuses past its limit and rejects a region it does not hold', () => {
    const source = addressSource({ granularity: 4096, limit: 8192 });
    const a = source.acquire(8192)!;
    expect(source.acquire(1)).toBeNull();
    source.release(a);
    expect(() => source.release(a)).toThrow(/a live region of this source/);
  });

  it('grows regions in place when growable, within the limit', () => {
    const source = addressSource({ granularity: 4096, growable: true, limit: 3 * 4096 });
    const a = source.acquire(4096)!;
    expect(source.grow!(a, 2 * 4096)).toBe(true);
    expect(a.size).toBe(8192);
    expect(source.grow!(a, 4 * 4096)).toBe(false);
    expect(source.peakReservedBytes()).toBe(8192);
    expect(source.growCount).toBe(1);
    expect(addressSource().grow).toBeUndefined();
  });

  it('starts over on reset', () => {
    const source = addressSource();
    const first = source.acquire(1)!.address;
    source.reset();
    expect(source.acquire(1)!.address).toBe(first);
    expect(source.acquireCount).toBe(1);
  });

  it('fits ten thousand growable regions, each still able to grow', () => {
    const source = addressSource({ growable: true });
    const regions = [];
    for (let i = 0; i < 10_000; i++) regions.push(source.acquire(2 ** 21)!);
    expect(regions.every((r) => r !== null)).toBe(true);
    expect(source.grow!(regions[9_999]!, 2 ** 30)).toBe(true);
    for (let i = 1; i < regions.length; i++) {
      expect(regions[i]!.address).toBeGreaterThanOrEqual(regions[i - 1]!.address + 2 ** 21);
    }
  });

  it('gives a growable region larger than maxRegionSize, and null once addresses run out', () => {
    const source = addressSource({ growable: true });
    expect(source.acquire(2 ** 41)!.size).toBe(2 ** 41);
    expect(source.acquire(2 ** 48)!.size).toBe(2 ** 48);
    const plain = addressSource();
    expect(plain.acquire(2 ** 52)).not.toBeNull();
    expect(plain.acquire(2 ** 52)).toBeNull();
  });
});
