import { OutOfMemoryError } from '@allot/core';
import { toTorchSnapshot, withStats } from '@allot/stats';
import { describeConformance } from '@allot/testkit/vitest';
import { describe, expect, it } from 'vitest';
import { fakeCuda, GiB, MiB } from '../test/fake-cuda';
import { cachingDeviceAllocator } from './caching-device-allocator';
import { fillDevice } from './copies';
import { createStream } from './streams';

// Device addresses belong to the device: two live instances never get the same ones from cudaMalloc
// or cuMemAddressReserve, so determinism is the pool's property, checked over the host source in
// @allot/caching, not this source's.
const capabilities = {
  deterministic: false,
  restoresInitialUsage: false,
  coalesces: true,
  maxRequestSize: 3 * MiB,
  alignments: [1, 8, 64, 512, 4096],
} as const;

// Allocators the property runs abandon keep their segments: give the fake room for all of them.
const conformanceCuda = () => fakeCuda({ capacity: 64 * GiB });
const shared = { fake: undefined as ReturnType<typeof fakeCuda> | undefined };
function cuda() {
  shared.fake ??= conformanceCuda();
  return shared.fake;
}

describeConformance({
  name: 'cachingDeviceAllocator on the fake CUDA device',
  create: () => cachingDeviceAllocator({ ...cuda(), config: '', limit: 64 * MiB }),
  capabilities,
});
describeConformance({
  name: 'cachingDeviceAllocator (expandable_segments:True) on the fake CUDA driver',
  create: () =>
    cachingDeviceAllocator({ ...cuda(), config: 'expandable_segments:True', limit: 64 * MiB }),
  capabilities,
});

describe('cachingDeviceAllocator (fake CUDA)', () => {
  it("uses PyTorch's segment sizes and statistics, and emptyCache gives memory back", () => {
    const fake = fakeCuda({ capacity: GiB });
    const allocator = cachingDeviceAllocator({ ...fake, config: '' });
    expect(allocator.totalMemory).toBe(GiB);
    const small = allocator.allocate(1000)!;
    const large = allocator.allocate(5 * MiB)!;
    const huge = allocator.allocate(16 * MiB)!; // does not fit the 15 MiB left in the 20 MiB segment
    expect(allocator.usableSize(small)).toBe(1024);
    const stats = allocator.memoryStats();
    expect(stats['reserved_bytes.small_pool.current']).toBe(2 * MiB);
    expect(stats['reserved_bytes.large_pool.current']).toBe(20 * MiB + 16 * MiB);
    expect(stats['allocated_bytes.all.current']).toBe(1024 + 5 * MiB + 16 * MiB);
    expect(allocator.memoryInfo().free).toBe(GiB - 38 * MiB);
    for (const a of [small, large, huge]) allocator.free(a);
    expect(allocator.memoryInfo().free).toBe(GiB - 38 * MiB); // cached
    allocator.emptyCache();
    expect(allocator.memoryInfo().free).toBe(GiB);
    expect(allocator.memoryStats().num_device_free).toBeGreaterThan(0);
  });

  it("reads PyTorch's configuration string", () => {
    const allocator = cachingDeviceAllocator({
      ...fakeCuda(),
      config: 'roundup_power2_divisions:4,max_split_size_mb:64,garbage_collection_threshold:0.8',
    });
    expect(allocator.settings.maxSplitSize).toBe(64 * MiB);
    expect(allocator.usableSize(allocator.allocate(1200)!)).toBe(1536);
  });

  it("runs PyTorch's out-of-memory path, then explains with the device's figures", () => {
    const allocator = cachingDeviceAllocator({ ...fakeCuda({ capacity: 64 * MiB }), config: '' });
    const a = allocator.allocate(30 * MiB)!;
    expect(allocator.allocate(40 * MiB)).toBeNull();
    let error: unknown;
    try {
      allocator.allocateOrThrow(40 * MiB);
    } catch (e) {
      error = e;
    }
    expect(OutOfMemoryError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('Tried to allocate 40.00 MiB');
    expect((error as Error).message).toContain(
      'The cuda-device source has a total capacity of 64.00 MiB',
    );
    allocator.free(a);
    // Cached blocks are released and the request retried before giving up.
    expect(allocator.allocate(40 * MiB)).not.toBeNull();
  });

  it('defers reuse of a block used on another stream until that stream has done its work', () => {
    const fake = fakeCuda({ queryLatency: 2 });
    const allocator = cachingDeviceAllocator({ ...fake, config: '' });
    const producer = createStream(fake);
    const consumer = createStream(fake);
    const address = allocator.allocateOn(producer.handle, MiB)!;
    fillDevice({ address, size: MiB }, 1, MiB, { stream: consumer });
    allocator.recordStream(address, consumer.handle);
    allocator.free(address);
    expect(allocator.usage().overheadBytes).toBe(MiB); // pending on the consumer's event
    const second = allocator.allocateOn(producer.handle, MiB)!;
    expect(second).not.toBe(address); // not reusable yet
    consumer.synchronize();
    allocator.processEvents();
    expect(allocator.usage().overheadBytes).toBe(0);
    allocator.free(second);
    expect(allocator.allocateOn(producer.handle, MiB)).toBe(address); // best fit, lowest address
  });

  it('blocks are reused only on their own stream', () => {
    const fake = fakeCuda();
    const allocator = cachingDeviceAllocator({ ...fake, config: '' });
    const one = createStream(fake);
    const two = createStream(fake);
    const a = allocator.allocateOn(one.handle, 4096)!;
    allocator.free(a);
    expect(allocator.allocateOn(two.handle, 4096)).not.toBe(a);
    expect(allocator.allocateOn(one.handle, 4096)).toBe(a);
  });

  it('gives withStats snapshots in the PyTorch visualiser format', () => {
    const allocator = cachingDeviceAllocator({ ...fakeCuda(), config: '' });
    const stats = withStats(allocator, { trace: true });
    const a = stats.allocate(3 * MiB)!;
    stats.allocate(1000);
    stats.free(a);
    const snapshot = toTorchSnapshot(stats.snapshot());
    expect(snapshot.segments.length).toBe(2);
    expect(snapshot.segments.map((s) => s.segment_type).sort()).toEqual(['large', 'small']);
    expect(snapshot.device_traces[0]?.some((t) => t.action === 'segment_alloc')).toBe(true);
  });
});
