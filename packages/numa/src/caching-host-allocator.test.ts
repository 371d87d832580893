import { describeConformance } from '@allot/testkit/vitest';
import { afterAll, describe, expect, it } from 'vitest';
import { type CachingHostAllocator, cachingHostAllocator } from './caching-host-allocator';
import { placement } from './placement';
import { BACKENDS, canLock, MiB } from './test-support/environment';

// Each run of the suite makes a fresh allocator; the previous one is done by then, so its segments
// go back to the kernel before the next maps its own (one live allocator at a time).
let current: CachingHostAllocator | undefined;
function fresh(options: Parameters<typeof cachingHostAllocator>[0]): CachingHostAllocator {
  if (current !== undefined) {
    current.reset();
    current.source.close();
  }
  current = cachingHostAllocator(options);
  return current;
}
afterAll(() => {
  current?.reset();
  current?.source.close();
});

// Segments of 2 MiB and 20 MiB: lock them only where the limit allows (root, or a raised limit).
const pin = canLock(64 * MiB) ? 'mlock' : false;
if (pin === false) console.warn('caching host allocator runs unpinned: RLIMIT_MEMLOCK is too low');

const capabilities = {
  restoresInitialUsage: false,
  coalesces: true,
  deterministic: false, // addresses come from mmap
  maxRequestSize: 3 * MiB,
  alignments: [1, 8, 64, 512, 4096],
} as const;

for (const { name, libnuma } of BACKENDS) {
  describeConformance({
    name: `caching host allocator on node 0 (${name}, pin: ${pin})`,
    create: () => {
      const allocator = fresh({ node: 0, libnuma, pin, config: '' });
      return {
        allocator,
        view: (address: number, size: number) => allocator.source.view(address, size),
      };
    },
    capabilities,
  });
}

describe('cachingHostAllocator', () => {
  it('caches page-locked segments on the node and reuses them', () => {
    const allocator = fresh({ node: 0, pin, config: '' });
    expect(allocator.source.pin).toBe(pin);
    const a = allocator.allocate(3 * MiB)!;
    const b = allocator.allocate(4096)!;
    expect(allocator.source.regions().length).toBe(2); // one large, one small segment
    for (const region of allocator.source.regions()) {
      expect(placement(region).byNode).toEqual({ 0: region.size / 4096 });
      if (pin) expect(region.pinned).toBe('mlock');
    }
    allocator.source.view(a, 3 * MiB).fill(7);
    allocator.free(a);
    const again = allocator.allocate(3 * MiB)!;
    expect(again).toBe(a); // served from the cache, no new mapping
    expect(allocator.source.regions().length).toBe(2);
    allocator.free(again);
    allocator.free(b);
    allocator.emptyCache();
    expect(allocator.source.regions()).toEqual([]);
    expect(allocator.source.lockedBytes()).toBe(0);
  });

  it('pins through CUDA hooks by default when they are given', () => {
    const registered = new Set<number>();
    const cuda = {
      hostRegister: (address: number) => registered.add(address),
      hostUnregister: (address: number) => registered.delete(address),
    };
    const allocator = fresh({ node: 0, cuda });
    expect(allocator.source.pin).toBe('cuda');
    const x = allocator.allocate(1000)!;
    expect(registered.size).toBe(1);
    allocator.free(x);
    allocator.emptyCache();
    expect(registered.size).toBe(0);
  });
});
