import {
  allocateOrThrow,
  fallback,
  InvalidArgumentError,
  InvalidFreeError,
  limit,
  OutOfMemoryError,
  segregate,
} from '@allot/core';
import { describe, expect, it } from 'vitest';
import { describeConformance } from '../src/vitest';
import { referenceAllocator } from './reference-allocator';

const small = () => referenceAllocator({ capacity: 4096, base: 0 });
const large = () => referenceAllocator({ capacity: 1 << 15, base: 1 << 20 });

describeConformance({
  name: 'segregate(reference, reference)',
  create: () => segregate({ threshold: 256, small: small(), large: large() }),
  capabilities: { coalesces: true, maxRequestSize: 1024 },
});

describeConformance({
  name: 'fallback(reference, reference)',
  create: () => fallback(small(), large()),
  capabilities: { coalesces: true, maxRequestSize: 1024 },
});

describeConformance({
  name: 'limit(reference)',
  create: () => limit(large(), { maxBytes: 8192 }),
  // The limit's free bytes are capped, so its usage and its upstream's layout differ by design.
  capabilities: { coalesces: true, layoutAccounting: false, maxRequestSize: 2048 },
});

describe('segregate', () => {
  it('routes by size and frees through the owner', () => {
    const s = small();
    const l = large();
    const a = segregate({ threshold: 256, small: s, large: l });
    const x = a.allocate(256)!;
    const y = a.allocate(257)!;
    expect(s.owns(x)).toBe(true);
    expect(l.owns(y)).toBe(true);
    a.free(y);
    a.free(x);
    expect(a.usage().liveCount).toBe(0);
    expect(() => a.free(x)).toThrow(InvalidFreeError);
  });

  it('does not send a small request to the large side when the small side is full', () => {
    const a = segregate({ threshold: 4096, small: small(), large: large() });
    expect(a.allocate(4096)).not.toBeNull();
    expect(a.allocate(8)).toBeNull();
  });

  it('rejects bad options', () => {
    const s = small();
    expect(() => segregate({ threshold: -1, small: s, large: large() })).toThrow(
      InvalidArgumentError,
    );
    expect(() => segregate({ threshold: 1, small: s, large: s })).toThrow(InvalidArgumentError);
  });
});

describe('fallback', () => {
  it('uses the secondary only when the primary refuses', () => {
    const p = small();
    const s = large();
    const a = fallback(p, s);
    const x = a.allocate(4096)!;
    const y = a.allocate(16)!;
    expect(p.owns(x)).toBe(true);
    expect(s.owns(y)).toBe(true);
    a.free(x);
    expect(p.owns(a.allocate(16)!)).toBe(true);
  });
});

describe('limit', () => {
  it('refuses past maxBytes with null and recovers after a free', () => {
    const a = limit(large(), { maxBytes: 100 });
    const x = a.allocate(96)!;
    expect(a.allocate(8)).toBeNull();
    expect(a.liveBytes).toBe(96);
    a.free(x);
    expect(a.allocate(96)).not.toBeNull();
    expect(a.allocate(97)).toBeNull(); // usable 104 would pass the cap
  });

  it('counts usable sizes, so rounding cannot sneak past the cap', () => {
    const a = limit(large(), { maxBytes: 20 });
    expect(a.allocate(17)).toBeNull(); // usable 24 > 20: refused and undone
    expect(a.usage().liveCount).toBe(0);
  });
});

describe('allocateOrThrow', () => {
  it('tells fragmentation from exhaustion', () => {
    const a = referenceAllocator({ capacity: 64, base: 0 });
    const blocks = [a.allocate(16)!, a.allocate(16)!, a.allocate(16)!, a.allocate(16)!];
    a.free(blocks[0]!);
    a.free(blocks[2]!);
    let error: unknown;
    try {
      allocateOrThrow(a, 32);
    } catch (e) {
      error = e;
    }
    expect(OutOfMemoryError.isInstance(error)).toBe(true);
    const oom = error as OutOfMemoryError;
    expect(oom.reason).toBe('fragmentation');
    expect(oom).toMatchObject({ requested: 32, freeBytes: 32, largestFreeBlock: 16, capacity: 64 });
    expect(oom.message).toMatch(/Fragmentation/);
    expect(() => allocateOrThrow(a, 48)).toThrow(/Exhaustion/);
  });
});
