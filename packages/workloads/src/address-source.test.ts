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

  it('follows recorded addresses while the sizes agree, then goes on in their direction', () => {
    const MiB = 2 ** 20;
    const base = 2 ** 40;
    const recorded = {
      address: [base + 100 * MiB, base + 60 * MiB, base + 20 * MiB],
      size: [20 * MiB, 20 * MiB, 40 * MiB],
      downward: true,
    };
    const source = addressSource({ recorded });
    expect(source.acquire(20 * MiB)!.address).toBe(base + 100 * MiB);
    expect(source.acquire(20 * MiB)!.address).toBe(base + 60 * MiB);
    // 30 MiB where the recording has 40: from here on, below every recorded address used.
    const third = source.acquire(30 * MiB)!;
    expect(third.address + third.size).toBeLessThan(base + 60 * MiB);
    const fourth = source.acquire(40 * MiB)!;
    expect(fourth.address + fourth.size).toBeLessThan(third.address);
    // Upward: past the highest recorded address used; a taken range is not followed.
    const up = addressSource({ recorded: { ...recorded, downward: false } });
    const a = up.acquire(20 * MiB)!;
    expect(up.acquire(2 * MiB)!.address).toBeGreaterThanOrEqual(a.address + a.size);
    const clash = addressSource({
      recorded: { address: [base, base + 2 * MiB], size: [4 * MiB, 4 * MiB], downward: false },
    });
    expect(clash.acquire(4 * MiB)!.address).toBe(base);
    expect(clash.acquire(4 * MiB)!.address).toBeGreaterThanOrEqual(base + 4 * MiB);
    // reset() follows the recording again from its start.
    source.reset();
    expect(source.acquire(20 * MiB)!.address).toBe(base + 100 * MiB);
  });
});
