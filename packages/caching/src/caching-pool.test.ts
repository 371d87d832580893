import { InvalidArgumentError, InvalidFreeError, OutOfMemoryError } from '@allot/core';
import { memoryStats, withStats } from '@allot/stats';
import { describe, expect, it } from 'vitest';
import { CachingPool, cachingPool } from './caching-pool';
import { KiB, MiB, manualStreams, recordingSource } from './test-support/recording-source';

function poolWith(config = '', limit?: number) {
  const source = recordingSource(limit === undefined ? {} : { limit });
  const pool = cachingPool({ source, config });
  const reserved = () => pool.usage().capacity;
  return { source, pool, reserved };
}

describe('fidelity: hand-worked cases from the documented rules', () => {
  it('9000 B rounds to 9216 B in a 2 MiB small segment', () => {
    const { source, pool, reserved } = poolWith();
    const a = pool.allocate(9000)!;
    expect(pool.usableSize(a)).toBe(9216);
    expect(source.acquired).toEqual([2 * MiB]);
    expect(reserved()).toBe(2 * MiB);
    expect(pool.layout().segments[0]!.pool).toBe('small');
  });

  it('9000 B rounds to 10240 B with roundup_power2_divisions:4; 1200 B to 1536 B', () => {
    const { source, pool } = poolWith('roundup_power2_divisions:4');
    expect(pool.usableSize(pool.allocate(9000)!)).toBe(10240);
    expect(pool.usableSize(pool.allocate(1200)!)).toBe(1536);
    expect(source.acquired).toEqual([2 * MiB]);
  });

  it('three 600 KiB requests share one 2 MiB segment; a fourth takes another', () => {
    const { source, pool, reserved } = poolWith();
    const steps: number[] = [];
    for (let i = 0; i < 3; i++) {
      pool.allocate(600 * KiB);
      steps.push(reserved());
    }
    expect(steps).toEqual([2 * MiB, 2 * MiB, 2 * MiB]);
    pool.allocate(600 * KiB);
    expect(source.acquired).toEqual([2 * MiB, 2 * MiB]);
    expect(reserved()).toBe(4 * MiB);
  });

  it('a 15 MiB request takes a 16 MiB segment; a 5 MiB request a 20 MiB one, shared', () => {
    const { source, pool, reserved } = poolWith();
    const big = pool.allocate(15 * MiB)!;
    expect(pool.usableSize(big)).toBe(16 * MiB); // the 1 MiB remainder is not split off
    expect(reserved()).toBe(16 * MiB);
    pool.allocate(5 * MiB);
    expect(reserved()).toBe(36 * MiB);
    pool.allocate(5 * MiB);
    expect(reserved()).toBe(36 * MiB);
    expect(source.acquired).toEqual([16 * MiB, 20 * MiB]);
    expect(pool.layout().segments.map((s) => s.pool)).toEqual(['large', 'large']);
  });

  it('does not split a large remainder of 1 MiB or less', () => {
    const { pool, reserved } = poolWith();
    const a = pool.allocate(19 * MiB + 512 * KiB)!;
    expect(reserved()).toBe(20 * MiB);
    expect(pool.usableSize(a)).toBe(20 * MiB);
    expect(pool.layout().segments[0]!.blocks).toHaveLength(1);
  });

  it('with max_split_size_mb:20 a freed 64 MiB block is not split for a 2 MiB request', () => {
    const { source, pool, reserved } = poolWith('max_split_size_mb:20');
    const big = pool.allocate(64 * MiB)!;
    pool.free(big);
    expect(reserved()).toBe(64 * MiB);
    const small = pool.allocate(2 * MiB)!;
    expect(source.acquired).toEqual([64 * MiB, 20 * MiB]);
    expect(reserved()).toBe(84 * MiB);
    expect(pool.usableSize(small)).toBe(2 * MiB);
    expect(pool.memoryStats()['oversize_segments.current']).toBe(2);
  });

  it('without max_split_size the same 64 MiB block is split for the 2 MiB request', () => {
    const { source, pool } = poolWith();
    const big = pool.allocate(64 * MiB)!;
    pool.free(big);
    expect(pool.allocate(2 * MiB)).toBe(big);
    expect(source.acquired).toEqual([64 * MiB]);
    expect(pool.layout().segments[0]!.blocks.map((b) => [b.size, b.free])).toEqual([
      [2 * MiB, false],
      [62 * MiB, true],
    ]);
  });

  it('an oversize block serves a large request only within max_non_split_rounding', () => {
    const { source, pool } = poolWith('max_split_size_mb:32');
    const big = pool.allocate(64 * MiB)!;
    pool.free(big);
    const a = pool.allocate(50 * MiB)!; // 64 < 50 + 20: reused whole, not split
    expect(a).toBe(big);
    expect(pool.usableSize(a)).toBe(64 * MiB);
    pool.free(a);
    pool.allocate(40 * MiB); // 64 ≥ 40 + 20: refused
    expect(source.acquired).toEqual([64 * MiB, 40 * MiB]);
  });

  it('max_non_split_rounding_mb widens what an oversize block may serve', () => {
    const { source, pool } = poolWith('max_split_size_mb:32,max_non_split_rounding_mb:30');
    const big = pool.allocate(64 * MiB)!;
    pool.free(big);
    expect(pool.allocate(40 * MiB)).toBe(big);
    expect(source.acquired).toEqual([64 * MiB]);
  });

  it('best fit: smallest cached block that fits, lowest address on ties', () => {
    const { pool } = poolWith();
    const blocks: number[] = [];
    for (const k of [8, 4, 8, 4, 16]) {
      blocks.push(pool.allocate(k * KiB)!);
      pool.allocate(512); // keeps the freed blocks apart
    }
    for (const b of blocks) pool.free(b);
    expect(pool.allocate(3 * KiB)).toBe(blocks[1]);
    expect(pool.allocate(5 * KiB)).toBe(blocks[0]);
  });

  it('merges a freed block with free neighbours in its segment', () => {
    const { pool } = poolWith();
    const a = pool.allocate(4 * KiB)!;
    const b = pool.allocate(4 * KiB)!;
    const c = pool.allocate(4 * KiB)!;
    pool.free(a);
    pool.free(c);
    expect(pool.layout().segments[0]!.blocks.map((x) => x.free)).toEqual([true, false, true]);
    pool.free(b);
    const [only] = pool.layout().segments[0]!.blocks;
    expect(pool.layout().segments[0]!.blocks).toHaveLength(1);
    expect(only).toMatchObject({ address: a, size: 2 * MiB, free: true });
    expect(pool.memoryStats()['inactive_split.all.current']).toBe(0);
  });

  it('keeps PyTorch inactive_split figures', () => {
    const { pool } = poolWith();
    const a = pool.allocate(4 * KiB)!;
    pool.allocate(4 * KiB);
    let s = pool.memoryStats();
    expect(s['inactive_split.small_pool.current']).toBe(1);
    expect(s['inactive_split_bytes.small_pool.current']).toBe(2 * MiB - 8 * KiB);
    pool.free(a);
    s = pool.memoryStats();
    expect(s['inactive_split.small_pool.current']).toBe(2);
    expect(s['inactive_split_bytes.all.current']).toBe(2 * MiB - 4 * KiB);
  });
});

describe('streams', () => {
  it('reuses a free block only on the stream it was allocated on', () => {
    const { source, pool } = poolWith();
    const a = pool.allocateOn(1, 4 * KiB)!;
    pool.free(a);
    const b = pool.allocate(4 * KiB)!; // stream 0: a segment of its own
    expect(b).not.toBe(a);
    expect(source.acquired).toEqual([2 * MiB, 2 * MiB]);
    expect(pool.withStream(1, () => pool.allocate(4 * KiB))).toBe(a);
    const streams = pool.layout().segments.map((s) => (s as { stream?: number }).stream);
    expect(streams.sort()).toEqual([0, 1]);
  });

  it('treats recordStream on a host source as a tag that completes at once', () => {
    const { pool } = poolWith();
    const a = pool.allocate(4 * KiB)!;
    pool.recordStream(a, 3);
    pool.free(a);
    expect(pool.allocate(4 * KiB)).toBe(a);
  });

  it('defers reuse until the source reports the recorded stream done', () => {
    const streams = manualStreams();
    const source = Object.assign(recordingSource(), streams);
    const pool = cachingPool({ source, config: '' });
    const a = pool.allocate(64 * KiB)!;
    pool.recordStream(a, 1);
    pool.recordStream(a, 2);
    pool.free(a);
    expect(pool.owns(a)).toBe(false);
    expect(pool.usage().overheadBytes).toBe(64 * KiB);
    expect(pool.layout().segments[0]!.blocks[0]).toMatchObject({ address: a, pendingFree: true });
    expect(pool.memoryStats()['active_bytes.all.current']).toBe(64 * KiB);
    expect(pool.memoryStats()['allocated_bytes.all.current']).toBe(0);
    expect(() => pool.free(a)).toThrow(InvalidFreeError);
    const b = pool.allocate(64 * KiB)!;
    expect(b).not.toBe(a);
    pool.free(b);
    streams.complete(1);
    expect(pool.allocate(64 * KiB)).not.toBe(a); // stream 2 still busy
    streams.complete(2);
    pool.processEvents();
    expect(pool.usage().overheadBytes).toBe(0);
    expect(streams.destroyed.sort()).toEqual([1, 2]);
  });

  it('emptyCache waits for pending frees where the source can', () => {
    const streams = manualStreams();
    const source = Object.assign(recordingSource(), streams);
    const pool = cachingPool({ source, config: '' });
    const a = pool.allocate(64 * KiB)!;
    pool.recordStream(a, 1);
    pool.free(a);
    pool.emptyCache();
    expect(pool.usage().capacity).toBe(0);
    expect(pool.memoryStats().num_sync_all_streams).toBe(1);
    expect(source.log).toEqual(['acquire 2 MiB', 'release 2 MiB']);
  });

  it('rejects a bad stream and a foreign address', () => {
    const { pool } = poolWith();
    const a = pool.allocate(512)!;
    expect(() => pool.recordStream(a, -1)).toThrow(InvalidArgumentError);
    expect(() => pool.recordStream(a + 512, 1)).toThrow(InvalidArgumentError);
    expect(() => pool.allocateOn(1.5, 512)).toThrow(InvalidArgumentError);
  });
});

describe('expandable segments', () => {
  it('grows one segment in place over a growable host source', () => {
    const source = recordingSource({ growable: true, maxRegionSize: 256 * MiB });
    const pool = cachingPool({ source, config: 'expandable_segments:True' });
    const a = pool.allocate(5 * MiB)!;
    expect(source.log).toEqual(['acquire 20 MiB']);
    const b = pool.allocate(18 * MiB)!;
    expect(b).toBe(a + 5 * MiB);
    expect(source.log).toEqual(['acquire 20 MiB', 'grow 20 MiB → 40 MiB']);
    expect(pool.usage().capacity).toBe(40 * MiB);
    const layout = pool.layout();
    expect(layout.segments).toHaveLength(1);
    expect(layout.segments[0]).toMatchObject({ size: 40 * MiB, expandable: true });
    pool.allocate(30 * MiB);
    expect(source.log.at(-1)).toBe('grow 40 MiB → 60 MiB');
    const view = source.view(a, 60 * MiB);
    expect(view.length).toBe(60 * MiB);
  });

  it('splits any remainder of 512 B or more, small pool in 2 MiB pages', () => {
    const source = recordingSource({ growable: true, maxRegionSize: 64 * MiB });
    const pool = cachingPool({ source, config: 'expandable_segments:True' });
    pool.allocate(768 * KiB);
    pool.allocate(768 * KiB);
    expect(source.log).toEqual(['acquire 2 MiB']);
    pool.allocate(768 * KiB);
    expect(source.log).toEqual(['acquire 2 MiB', 'grow 2 MiB → 4 MiB']);
    expect(pool.usage().capacity).toBe(4 * MiB);
  });

  it('falls back to plain segments on a source that cannot grow', () => {
    const { source, pool } = poolWith('expandable_segments:True');
    pool.allocate(5 * MiB);
    pool.allocate(18 * MiB);
    expect(source.acquired).toEqual([20 * MiB, 18 * MiB]);
  });

  it('gives a whole free expandable segment back on emptyCache', () => {
    const source = recordingSource({ growable: true, maxRegionSize: 256 * MiB });
    const pool = cachingPool({ source, config: 'expandable_segments:True' });
    const a = pool.allocate(5 * MiB)!;
    const b = pool.allocate(18 * MiB)!;
    pool.free(a);
    pool.free(b);
    pool.emptyCache();
    expect(pool.usage().capacity).toBe(0);
    expect(source.log.at(-1)).toBe('release 40 MiB');
    pool.allocate(MiB * 3);
    expect(source.log.at(-1)).toBe('acquire 20 MiB');
  });
});

describe('the out-of-memory path', () => {
  it('runs callbacks, then a fresh segment, then releases oversize blocks and retries', () => {
    const { source, pool } = poolWith('max_split_size_mb:20', 64 * MiB);
    pool.onFreeMemory(() => {
      source.log.push('callback');
      return false;
    });
    pool.free(pool.allocate(30 * MiB)!);
    pool.free(pool.allocate(5 * MiB)!);
    source.log.length = 0;
    const a = pool.allocate(40 * MiB);
    expect(a).not.toBeNull();
    expect(source.log).toEqual([
      'callback',
      'acquire 40 MiB → null',
      'release 30 MiB',
      'release 20 MiB',
      'acquire 40 MiB',
    ]);
    expect(pool.memoryStats().num_alloc_retries).toBe(0);
  });

  it('then releases every unused segment and retries, then fails with PyTorch’s message', () => {
    const { source, pool } = poolWith('max_split_size_mb:32', 64 * MiB);
    pool.onFreeMemory(() => {
      source.log.push('callback');
      return false;
    });
    pool.allocate(40 * MiB);
    pool.free(pool.allocate(5 * MiB)!);
    pool.free(pool.allocate(4 * KiB)!);
    expect(pool.usage().capacity).toBe(62 * MiB);
    source.log.length = 0;
    expect(pool.allocate(30 * MiB)).toBeNull();
    expect(source.log).toEqual([
      'callback',
      'acquire 30 MiB → null',
      'release 20 MiB',
      'release 2 MiB',
      'acquire 30 MiB → null',
    ]);
    const stats = pool.memoryStats();
    expect(stats.num_alloc_retries).toBe(1);
    expect(stats.num_ooms).toBe(1);
    let error: unknown;
    try {
      pool.allocateOrThrow(30 * MiB);
    } catch (e) {
      error = e;
    }
    expect(OutOfMemoryError.isInstance(error)).toBe(true);
    const message = (error as OutOfMemoryError).message;
    expect(message).toContain('Out of memory. Tried to allocate 30.00 MiB.');
    expect(message).toContain('Of the allocated memory 40.00 MiB is allocated by the pool');
    expect(message).toContain('and 0 bytes is reserved by the pool but unallocated.');
    expect(message).toContain('ALLOT_ALLOC_CONF=expandable_segments:True');
    expect((error as OutOfMemoryError).diagnosis).toMatchObject({ requested: 30 * MiB });
  });

  it('a free-memory callback that frees lets the search succeed without a new segment', () => {
    const { source, pool } = poolWith('', 2 * MiB);
    const held = [pool.allocate(MiB)!, pool.allocate(MiB)!];
    pool.onFreeMemory(({ size }) => {
      expect(size).toBe(MiB);
      pool.free(held.pop()!);
      return true;
    });
    expect(pool.allocate(MiB)).not.toBeNull();
    expect(source.acquired).toEqual([2 * MiB]);
  });

  it('reports total capacity, allowed memory and fragmentation', () => {
    const source = recordingSource();
    const pool = cachingPool({ source, config: '', totalMemory: 64 * MiB, memoryFraction: 0.5 });
    const live: number[] = [];
    for (let i = 0; i < 16; i++) live.push(pool.allocate(MiB)!);
    for (let i = 0; i < 16; i += 2) pool.free(live[i]!);
    expect(pool.usage().capacity).toBe(16 * MiB);
    pool.allocate(15 * MiB);
    expect(pool.usage().capacity).toBe(32 * MiB);
    expect(() => pool.allocateOrThrow(2 * MiB)).toThrow(
      'Out of memory. Tried to allocate 20.00 MiB. The host source has a total capacity of ' +
        '64.00 MiB of which 32.00 MiB is free. 32.00 MiB allowed; Of the allocated memory ' +
        '24.00 MiB is allocated by the pool, and 8.00 MiB is reserved by the pool but unallocated.',
    );
  });

  it('collects old cached large blocks above the garbage-collection threshold', () => {
    const source = recordingSource();
    const pool = cachingPool({
      source,
      config: 'garbage_collection_threshold:0.5',
      totalMemory: 100 * MiB,
      memoryFraction: 1,
    });
    const blocks = [pool.allocate(15 * MiB)!, pool.allocate(15 * MiB)!, pool.allocate(15 * MiB)!];
    for (const b of blocks) pool.free(b);
    pool.allocate(30 * MiB);
    source.log.length = 0;
    pool.allocate(40 * MiB);
    expect(source.log).toEqual([
      'release 16 MiB',
      'release 16 MiB',
      'release 16 MiB',
      'acquire 40 MiB',
    ]);
  });

  it('does not collect garbage without a memory fraction', () => {
    const { source, pool } = poolWith('garbage_collection_threshold:0.5');
    pool.free(pool.allocate(15 * MiB)!);
    source.log.length = 0;
    pool.allocate(40 * MiB);
    expect(source.log).toEqual(['acquire 40 MiB']);
  });

  it('takes a memory fraction of 0, as PyTorch does: nothing can be reserved', () => {
    const source = recordingSource();
    const pool = cachingPool({
      source,
      config: 'per_process_memory_fraction:0',
      totalMemory: 64 * MiB,
    });
    expect(pool.allowedMemoryBytes).toBe(0);
    expect(pool.allocate(512)).toBeNull();
    expect(source.log).toEqual([]);
    expect(() =>
      cachingPool({ source, config: '', totalMemory: MiB, memoryFraction: -0.1 }),
    ).toThrow(InvalidArgumentError);
  });

  it('refuses a memory fraction without a total', () => {
    expect(() =>
      cachingPool({ source: recordingSource(), config: '', memoryFraction: 0.5 }),
    ).toThrow(InvalidArgumentError);
    expect(() =>
      cachingPool({ source: recordingSource(), config: 'per_process_memory_fraction:0.5' }),
    ).toThrow(/totalMemory/);
  });
});

describe('giving memory back', () => {
  function cached() {
    const { source, pool, reserved } = poolWith();
    const blocks = [pool.allocate(4 * KiB)!, pool.allocate(5 * MiB)!, pool.allocate(25 * MiB)!];
    for (const b of blocks) pool.free(b);
    expect(source.acquired).toEqual([2 * MiB, 20 * MiB, 26 * MiB]);
    source.log.length = 0;
    return { source, pool, reserved };
  }

  it('emptyCache releases every unused segment, keeping used ones', () => {
    const { source, pool, reserved } = cached();
    const keep = pool.allocate(4 * KiB)!;
    pool.emptyCache();
    expect(source.log).toEqual(['release 20 MiB', 'release 26 MiB']);
    expect(reserved()).toBe(2 * MiB);
    pool.free(keep);
    pool.emptyCache();
    expect(reserved()).toBe(0);
    expect(pool.memoryStats().num_device_free).toBe(3);
  });

  it('release(bytes) takes the smallest segment that covers it', () => {
    const { source, pool } = cached();
    expect(pool.release(3 * MiB)).toBe(20 * MiB);
    expect(source.log).toEqual(['release 20 MiB']);
  });

  it('release(bytes) takes the largest first when no single segment covers it', () => {
    const { source, pool, reserved } = cached();
    expect(pool.release(30 * MiB)).toBe(46 * MiB);
    expect(source.log).toEqual(['release 26 MiB', 'release 20 MiB']);
    expect(reserved()).toBe(2 * MiB);
    expect(pool.release(100 * MiB)).toBe(2 * MiB);
    expect(pool.release(1)).toBe(0);
  });

  it('decay returns segments unused for decayMs', () => {
    let now = 0;
    const source = recordingSource();
    const pool = cachingPool({ source, config: '', decayMs: 1000, clock: () => now });
    const a = pool.allocate(4 * KiB)!;
    const b = pool.allocate(5 * MiB)!;
    pool.free(a);
    now = 600;
    pool.free(b);
    now = 999;
    expect(pool.decay()).toBe(0);
    now = 1000;
    expect(pool.decay()).toBe(2 * MiB);
    now = 1500;
    const c = pool.allocate(4 * KiB)!; // a miss: decays nothing yet (b idle since 600)
    expect(source.log).toEqual([
      'acquire 2 MiB',
      'acquire 20 MiB',
      'release 2 MiB',
      'acquire 2 MiB',
    ]);
    now = 1700;
    pool.free(c); // a segment becomes unused: the old one has waited long enough
    expect(source.log.slice(4)).toEqual(['release 20 MiB']);
    expect(pool.usage().capacity).toBe(2 * MiB);
  });

  it('reset gives every segment back', () => {
    const { source, pool } = cached();
    pool.allocate(MiB);
    pool.reset();
    expect(pool.usage()).toMatchObject({ capacity: 0, allocatedBytes: 0, liveCount: 0 });
    expect(source.reservedBytes()).toBe(0);
  });
});

describe('private pools', () => {
  it('routes allocations inside withPrivatePool to segments of their own', () => {
    const { source, pool } = poolWith();
    pool.free(pool.allocate(4 * KiB)!);
    let inside = 0;
    const priv = pool.withPrivatePool((p) => {
      inside = pool.allocate(4 * KiB)!;
      return p;
    });
    expect(source.acquired).toEqual([2 * MiB, 2 * MiB]);
    expect(priv.usage()).toMatchObject({
      capacity: 2 * MiB,
      allocatedBytes: 4 * KiB,
      liveCount: 1,
    });
    expect(priv.memoryStats()['allocated_bytes.small_pool.current']).toBe(4 * KiB);
    expect(pool.usage()).toMatchObject({ capacity: 4 * MiB, allocatedBytes: 4 * KiB });
    expect(
      pool
        .layout()
        .segments.map((s) => s.pool)
        .sort(),
    ).toEqual(['private-1/small', 'small']);
    const outside = pool.allocate(4 * KiB)!;
    expect(priv.layout().segments[0]!.blocks.some((b) => b.address === outside)).toBe(false);
    pool.free(inside);
    pool.emptyCache(); // a live private pool keeps its cache
    expect(priv.usage().capacity).toBe(2 * MiB);
    priv.release();
    expect(priv.usage().capacity).toBe(0);
    expect(() => pool.usePrivatePool(priv)).toThrow(InvalidArgumentError);
  });

  it('works as a using scope, and releases a pool once its last block is freed', () => {
    const { pool } = poolWith();
    const priv = pool.createPrivatePool();
    let a: number;
    {
      using scope = pool.usePrivatePool(priv);
      expect(scope.pool).toBe(priv);
      a = pool.allocate(MiB)!;
    }
    const b = pool.allocate(MiB)!;
    expect(priv.usage().liveCount).toBe(1);
    priv.release();
    expect(priv.usage().capacity).toBe(2 * MiB);
    pool.free(a);
    expect(priv.usage().capacity).toBe(0);
    expect(pool.usage()).toMatchObject({ capacity: 2 * MiB, liveCount: 1 });
    pool.free(b);
  });

  it('nests scopes', () => {
    const { pool } = poolWith();
    const outer = pool.createPrivatePool();
    const inner = pool.createPrivatePool();
    pool.withPrivatePool(outer, () => {
      pool.withPrivatePool(inner, () => pool.allocate(512));
      pool.allocate(512);
    });
    pool.allocate(512);
    expect([outer.usage().liveCount, inner.usage().liveCount, pool.usage().liveCount]).toEqual([
      1, 1, 3,
    ]);
  });
});

describe('statistics', () => {
  it('gives memoryStats() with PyTorch’s keys', () => {
    const { pool } = poolWith();
    const a = pool.allocate(1000)!;
    pool.allocate(3 * MiB);
    pool.free(a);
    const s = pool.memoryStats();
    expect(s['allocation.all.current']).toBe(1);
    expect(s['allocation.all.allocated']).toBe(2);
    expect(s['segment.small_pool.current']).toBe(1);
    expect(s['segment.large_pool.current']).toBe(1);
    expect(s['reserved_bytes.all.current']).toBe(22 * MiB);
    expect(s['requested_bytes.large_pool.current']).toBe(3 * MiB);
    expect(s['allocated_bytes.small_pool.peak']).toBe(1024);
    expect(s.max_split_size).toBe(-1);
    expect(s.num_device_alloc).toBe(2);
    for (const key of ['num_alloc_retries', 'num_ooms', 'inactive_split.all.peak']) {
      expect(key in s).toBe(true);
    }
    pool.resetPeakMemoryStats();
    expect(pool.memoryStats()['allocated_bytes.small_pool.peak']).toBe(0);
  });

  it('feeds withStats: memoryStats, the segment trace and the snapshot', () => {
    const { pool } = poolWith('max_split_size_mb:64');
    const stats = withStats(pool, { trace: true });
    const a = stats.allocate(4 * KiB)!;
    stats.free(a);
    pool.emptyCache();
    const s = memoryStats(stats);
    expect(s['segment.small_pool.allocated']).toBe(1);
    expect(s['segment.small_pool.freed']).toBe(1);
    expect(s.max_split_size).toBe(64 * MiB);
    const actions = stats.trace().map((e) => e.action);
    expect(actions[0]).toBe('segment_alloc');
    expect(actions.at(-1)).toBe('segment_free');
    // The trace reads in causal order: the free is requested, then completed, then the segment goes.
    expect(actions).toEqual([
      'segment_alloc',
      'alloc',
      'free_requested',
      'free_completed',
      'segment_free',
    ]);
    stats.allocate(MiB);
    const snapshot = stats.snapshot();
    expect(snapshot.segments[0]).toMatchObject({ pool: 'small', size: 2 * MiB });
    expect(snapshot.allocatorSettings?.max_split_size).toBe(64 * MiB);
  });
});

describe('misuse', () => {
  it('classifies bad frees', () => {
    const { pool } = poolWith();
    const a = pool.allocate(4 * KiB)!;
    pool.allocate(4 * KiB);
    const reason = (address: number) => {
      try {
        pool.free(address);
      } catch (error) {
        return (error as InvalidFreeError).reason;
      }
      return 'accepted';
    };
    expect(reason(a + 512)).toBe('interior-pointer');
    expect(reason(a + 64 * KiB)).toBe('not-live');
    expect(reason(1)).toBe('foreign-address');
    pool.free(a);
    expect(reason(a)).toBe('double-free');
  });

  it('honours alignments above 512 B', () => {
    const { pool } = poolWith();
    pool.allocate(512);
    const a = pool.allocate(1000, 64 * KiB)!;
    expect(a % (64 * KiB)).toBe(0);
    expect(pool.usableSize(a)).toBe(1024);
    const big = pool.allocate(12 * MiB, 4 * MiB)!;
    expect(big % (4 * MiB)).toBe(0);
  });

  it('rejects bad options', () => {
    const source = recordingSource();
    expect(() => new CachingPool({ source, config: 'max_split_size_mb:abc' })).toThrow(
      /max_split_size_mb/,
    );
    expect(() => cachingPool({ source, config: '', decayMs: -1 })).toThrow(InvalidArgumentError);
    expect(() => cachingPool({ source, env: { ALLOT_ALLOC_CONF: 'nope:1' } })).toThrow(/nope/);
  });
});
