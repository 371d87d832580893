import { buddy } from '@allot/buddy';
import { type Allocator, InvalidArgumentError, InvalidFreeError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { PageMap } from './page-map';
import { defaultSizeClasses, transformerSizeClasses } from './size-classes';
import { slab } from './slab';

const KiB = 1024;
const BASE = 2 ** 40;

function upstream(capacity = 1 << 24): ReturnType<typeof buddy> {
  return buddy({ capacity, base: BASE, minBlockSize: 4 * KiB });
}

/** Passes through to `inner`, except that `allocate` returns null while `failing` is set. */
function failing(inner: Allocator): Allocator & { failing: boolean; upstream: Allocator } {
  return {
    failing: false,
    upstream: inner,
    alignment: inner.alignment,
    allocate(size, alignment) {
      return this.failing ? null : inner.allocate(size, alignment);
    },
    free: (address) => inner.free(address),
    usableSize: (address) => inner.usableSize(address),
    owns: (address) => inner.owns(address),
    usage: () => inner.usage(),
    reset: () => inner.reset(),
  };
}

describe('size classes', () => {
  it('bounds the rounding waste of the default table', () => {
    expect(defaultSizeClasses).toHaveLength(48);
    expect(defaultSizeClasses.slice(0, 12)).toEqual([
      8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128,
    ]);
    expect(defaultSizeClasses.at(-1)).toBe(64 * KiB);
    let c = 0;
    let worstSmall = 0;
    let worstRatio = 0;
    for (let size = 1; size <= 64 * KiB; size++) {
      while (defaultSizeClasses[c]! < size) c++;
      const waste = defaultSizeClasses[c]! - size;
      if (size <= 64) worstSmall = Math.max(worstSmall, waste);
      else worstRatio = Math.max(worstRatio, waste / size);
    }
    expect(worstSmall).toBe(7);
    expect(worstRatio).toBeLessThan(0.25);
  });

  it('mirrors the transformer buckets', () => {
    expect(transformerSizeClasses).toEqual([
      64,
      256,
      KiB,
      4 * KiB,
      16 * KiB,
      64 * KiB,
      256 * KiB,
      1024 * KiB,
    ]);
  });
});

describe('slab', () => {
  it('rounds a request up to its class and aligns objects to the class', () => {
    const objects = slab({ upstream: upstream() });
    expect(objects.alignment).toBe(8);
    expect(objects.upstream).toBeDefined();
    const a = objects.allocate(100)!;
    expect(objects.usableSize(a)).toBe(112);
    expect(a % 16).toBe(0);
    const b = objects.allocate(100)!;
    expect(b - a).toBe(112);
    const c = objects.allocate(64 * KiB)!;
    expect(objects.usableSize(c)).toBe(64 * KiB);
    expect(c % (64 * KiB)).toBe(0);
    expect(objects.allocate(64 * KiB + 1)).toBeNull();
    expect(objects.maxRequestSize).toBe(64 * KiB);
  });

  it('sends a request that needs more alignment to a larger class, or refuses it', () => {
    const objects = slab({ upstream: upstream() });
    const a = objects.allocate(24, 64)!;
    expect(a % 64).toBe(0);
    expect(objects.usableSize(a)).toBe(64);
    const b = objects.allocate(100, 256)!;
    expect(b % 256).toBe(0);
    expect(objects.usableSize(b)).toBe(256);
    expect(objects.allocate(8, 128 * KiB)).toBeNull();
    const small = slab({ upstream: upstream(), sizeClasses: [24, 48] });
    expect(small.alignment).toBe(8);
    expect(small.usableSize(small.allocate(8, 16)!)).toBe(48);
    expect(small.allocate(8, 32)).toBeNull();
  });

  it('keeps full, partial and empty slabs and their figures', () => {
    const objects = slab({ upstream: upstream(), sizeClasses: [4 * KiB], slabSize: 16 * KiB });
    const stats = () => {
      const s = objects.classStats()[0]!;
      return [s.liveObjects, s.fullSlabs, s.partialSlabs, s.emptySlabs];
    };
    const addresses = Array.from({ length: 6 }, () => objects.allocate(4000)!);
    expect(stats()).toEqual([6, 1, 1, 0]);
    objects.free(addresses[5]!);
    objects.free(addresses[4]!);
    expect(stats()).toEqual([4, 1, 0, 1]);
    objects.free(addresses[0]!);
    expect(stats()).toEqual([3, 0, 1, 1]);
    const s = objects.classStats()[0]!;
    expect(s).toMatchObject({
      size: 4 * KiB,
      alignment: 4 * KiB,
      slabBytes: 16 * KiB,
      objectsPerSlab: 4,
      freeObjects: 5,
      heldBytes: 32 * KiB,
      requestedBytes: 3 * 4000,
      roundingWasteBytes: 3 * 96,
      tailWasteBytes: 0,
    });
    // The partial slab serves before the empty one.
    expect(objects.allocate(1)).toBe(addresses[0]);
  });

  it('gives an empty slab back upstream once more than maxEmptySlabs are held', () => {
    for (const maxEmptySlabs of [0, 1, 2]) {
      const source = upstream();
      const objects = slab({
        upstream: source,
        sizeClasses: [1 * KiB],
        slabSize: 4 * KiB,
        maxEmptySlabs,
      });
      const addresses = Array.from({ length: 16 }, () => objects.allocate(KiB)!);
      expect(source.usage().liveCount).toBe(4);
      for (const address of addresses) objects.free(address);
      expect(source.usage().liveCount).toBe(maxEmptySlabs);
      expect(objects.classStats()[0]!.emptySlabs).toBe(maxEmptySlabs);
      expect(objects.usage()).toMatchObject({
        capacity: maxEmptySlabs * 4 * KiB,
        allocatedBytes: 0,
        freeBytes: maxEmptySlabs * 4 * KiB,
        liveCount: 0,
      });
    }
  });

  it('does not thrash on a slab boundary when one empty slab may be kept', () => {
    const source = upstream();
    const objects = slab({ upstream: source, sizeClasses: [KiB], slabSize: 4 * KiB });
    for (let i = 0; i < 100; i++) objects.free(objects.allocate(KiB)!);
    expect(source.usage().liveCount).toBe(1);
  });

  it('returns null, changing nothing, when the upstream has no slab to give', () => {
    const source = failing(upstream());
    const objects = slab({ upstream: source, sizeClasses: [64, 256] });
    const a = objects.allocate(64)!;
    const before = {
      usage: objects.usage(),
      layout: objects.layout(),
      stats: objects.classStats(),
    };
    source.failing = true;
    expect(objects.allocate(200)).toBeNull();
    expect({
      usage: objects.usage(),
      layout: objects.layout(),
      stats: objects.classStats(),
    }).toEqual(before);
    expect(objects.allocate(64)).not.toBeNull(); // served from the slab it holds
    source.failing = false;
    expect(objects.allocate(200)).not.toBeNull();
    objects.free(a);
  });

  it('aligns slabs inside padded runs when the upstream ignores alignment', () => {
    const inner = upstream();
    const careless: Allocator = {
      alignment: 8,
      allocate: (size) => inner.allocate(size + 8)! + 8,
      free: (address) => inner.free(address - 8),
      usableSize: (address) => inner.usableSize(address - 8) - 8,
      owns: (address) => inner.owns(address - 8),
      usage: () => inner.usage(),
      reset: () => inner.reset(),
    };
    const objects = slab({ upstream: careless, sizeClasses: [64, 4 * KiB], slabSize: 16 * KiB });
    const a = objects.allocate(60)!;
    const b = objects.allocate(4000)!;
    expect(a % 64).toBe(0);
    expect(b % (4 * KiB)).toBe(0);
    expect(inner.usage().liveCount).toBe(2);
    const [first] = objects.layout().segments;
    expect(first!.address % (16 * KiB)).not.toBe(0); // the padded run, as the upstream gave it
    expect(first!.blocks[0]!.address).toBe(a);
    expect(first!.blocks.at(-1)!.address + 64).toBeLessThanOrEqual(first!.address + first!.size);
    objects.free(a);
    objects.free(b);
    objects.reset();
    expect(inner.usage().liveCount).toBe(0);
  });

  it('throws typed errors on misuse and changes nothing', () => {
    const objects = slab({ upstream: upstream(), sizeClasses: [48, 1000] });
    const a = objects.allocate(48)!;
    const b = objects.allocate(40)!;
    const c = objects.allocate(1000)!;
    objects.free(b);
    const before = { usage: objects.usage(), layout: objects.layout() };
    const reasonOf = (address: number): string => {
      try {
        objects.free(address);
      } catch (error) {
        expect(InvalidFreeError.isInstance(error)).toBe(true);
        return (error as InvalidFreeError).reason;
      }
      return 'no error';
    };
    expect(reasonOf(b)).toBe('double-free');
    expect(reasonOf(a + 8)).toBe('interior-pointer');
    expect(reasonOf(c + 999)).toBe('interior-pointer');
    expect(reasonOf(a + 48 * 10)).toBe('not-live'); // never handed out
    expect(reasonOf(c + 64 * KiB - 8)).toBe('not-live'); // the slab's tail
    expect(reasonOf(BASE - 64)).toBe('foreign-address');
    expect(reasonOf(2 ** 45)).toBe('foreign-address');
    expect(reasonOf(-1)).toBe('foreign-address');
    expect(reasonOf(Number.NaN)).toBe('foreign-address');
    expect(reasonOf(String(a) as unknown as number)).toBe('foreign-address');
    expect(reasonOf(Symbol('a') as unknown as number)).toBe('foreign-address');
    expect(reasonOf(BigInt(a) as unknown as number)).toBe('foreign-address');
    expect(reasonOf(a + 0.5)).toBe('not-live');
    expect(() => objects.allocate(0)).toThrow(InvalidArgumentError);
    expect(() => objects.allocate(2.5)).toThrow(InvalidArgumentError);
    expect(() => objects.allocate(2 ** 60)).toThrow(InvalidArgumentError);
    expect(() => objects.allocate(8, 12)).toThrow(InvalidArgumentError);
    expect(() => objects.usableSize(b)).toThrow(InvalidArgumentError);
    expect({ usage: objects.usage(), layout: objects.layout() }).toEqual(before);
    expect(objects.owns(a)).toBe(true);
    expect(objects.owns(b)).toBe(false);
    expect(objects.owns(a + 8)).toBe(false);
  });

  it('checks its options', () => {
    const source = upstream();
    const bad: Record<string, unknown>[] = [
      {},
      { upstream: {} },
      { upstream: source, sizeClasses: [] },
      { upstream: source, sizeClasses: [16, 8] },
      { upstream: source, sizeClasses: [16, 16] },
      { upstream: source, sizeClasses: [0, 8] },
      { upstream: source, sizeClasses: [1.5] },
      { upstream: source, sizeClasses: 'tiny' },
      { upstream: source, slabSize: 3000 },
      { upstream: source, maxEmptySlabs: -1 },
    ];
    for (const options of bad) {
      expect(() => slab(options as never), JSON.stringify(Object.keys(options))).toThrow(
        InvalidArgumentError,
      );
    }
  });

  it('describes each slab as a segment labelled with its class', () => {
    const objects = slab({ upstream: upstream(), sizeClasses: [64, 4 * KiB], slabSize: 16 * KiB });
    const a = objects.allocate(50)!;
    objects.allocate(3000);
    const { segments } = objects.layout();
    expect(segments.map((s) => [s.pool, s.size, s.blocks.length])).toEqual([
      ['64 B', 16 * KiB, 256],
      ['4096 B', 16 * KiB, 4],
    ]);
    expect(segments[0]!.blocks[0]).toEqual({
      address: a,
      size: 64,
      free: false,
      requestedSize: 50,
    });
    expect(segments[0]!.blocks[1]).toEqual({ address: a + 64, size: 64, free: true });
  });

  it('gives every slab back on reset', () => {
    const source = upstream();
    const objects = slab({ upstream: source, maxEmptySlabs: 4 });
    for (let i = 1; i < 40; i++) objects.allocate(i * 97);
    expect(source.usage().liveCount).toBeGreaterThan(10);
    objects.reset();
    expect(source.usage().liveCount).toBe(0);
    expect(objects.usage()).toMatchObject({ capacity: 0, liveCount: 0 });
    expect(objects.allocate(8)).not.toBeNull();
  });

  it('serves many slabs at addresses above 2^40, reusing slab ids', () => {
    const source = upstream(1 << 26);
    const objects = slab({
      upstream: source,
      sizeClasses: [256],
      slabSize: 4 * KiB,
      maxEmptySlabs: 0,
    });
    const addresses: number[] = [];
    for (let i = 0; i < 5000; i++) addresses.push(objects.allocate(200)!);
    expect(new Set(addresses).size).toBe(5000);
    expect(source.usage().liveCount).toBe(Math.ceil(5000 / 16));
    for (let i = 0; i < 5000; i += 2) objects.free(addresses[i]!);
    for (let i = 1; i < 5000; i += 2) objects.free(addresses[i]!);
    expect(source.usage().liveCount).toBe(0);
    for (let i = 0; i < 100; i++) expect(objects.allocate(256)).toBeGreaterThanOrEqual(BASE);
  });
});

describe('PageMap', () => {
  it('maps, forgets and grows, for page numbers far above 2^32', () => {
    const map = new PageMap();
    const pages: number[] = [];
    for (let i = 0; i < 1000; i++) pages.push(i % 2 ? 2 ** 40 + i * 3 : i * 7919);
    pages.forEach((page, id) => {
      map.set(page, id);
    });
    pages.forEach((page, id) => {
      expect(map.get(page)).toBe(id);
    });
    expect(map.get(12345678901)).toBe(-1);
    for (let i = 0; i < 1000; i += 3) map.delete(pages[i]!);
    pages.forEach((page, id) => {
      expect(map.get(page)).toBe(id % 3 === 0 ? -1 : id);
    });
    map.delete(99);
    map.clear();
    expect(map.get(pages[1]!)).toBe(-1);
  });
});
