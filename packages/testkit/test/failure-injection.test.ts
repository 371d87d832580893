import { hostSource, limit, segregate } from '@allot/core';
import { describe, expect, it } from 'vitest';
import {
  failingAllocator,
  failingSource,
  failurePlan,
  forEachFailurePoint,
} from '../src/failure-injection';
import { referenceAllocator } from './reference-allocator';

describe('failure injection', () => {
  it('fails exactly the N-th allocation, or every one from N on', () => {
    const once = failingAllocator(referenceAllocator({ capacity: 1024 }), failurePlan(1));
    expect(once.allocate(8)).not.toBeNull();
    expect(once.allocate(8)).toBeNull();
    expect(once.allocate(8)).not.toBeNull();
    const sticky = failingAllocator(referenceAllocator({ capacity: 1024 }), failurePlan(1, true));
    expect(sticky.allocate(8)).not.toBeNull();
    expect(sticky.allocate(8)).toBeNull();
    expect(sticky.allocate(8)).toBeNull();
  });

  it('drives an adaptor through every upstream failure point, leaving its state consistent', () => {
    const runs = forEachFailurePoint((plan) => {
      const upstream = failingAllocator(
        referenceAllocator({ capacity: 1 << 12, base: 1 << 20 }),
        plan,
      );
      const a = limit(
        segregate({
          threshold: 64,
          small: referenceAllocator({ capacity: 1024 }),
          large: upstream,
        }),
        {
          maxBytes: 1 << 12,
        },
      );
      const got: number[] = [];
      for (const size of [100, 8, 200, 16, 300]) {
        const address = a.allocate(size);
        if (address !== null) got.push(address);
      }
      expect(a.usage().liveCount).toBe(got.length);
      for (const address of got) a.free(address);
      expect(a.usage().allocatedBytes).toBe(0);
    });
    expect(runs).toBe(4); // three large requests reach the upstream, then a run without a failure
  });

  it('makes a memory source refuse', () => {
    const source = failingSource(hostSource(), failurePlan(0));
    expect(source.acquire(4096)).toBeNull();
    const region = source.acquire(4096)!;
    expect(source.view!(region.address, 4).length).toBe(4);
  });
});
