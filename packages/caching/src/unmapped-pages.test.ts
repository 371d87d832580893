import { addressSource } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { cachingPool } from './caching-pool';

const MiB = 2 ** 20;

/** An expandable pool over an address-only device of `limit` bytes that can unmap pages. */
function expandablePool(limit: number) {
  const source = addressSource({ limit, growable: true });
  const pool = cachingPool({ source, config: 'expandable_segments:True' });
  const decisions = () => source.decisions().map((bytes) => bytes / MiB);
  const reserved = () => pool.memoryStats()['reserved_bytes.all.current'];
  /** Each mapped run of the layout as [offset, size] in MiB from the segment's base. */
  const runs = (base: number) =>
    pool.layout().segments.map((s) => [(s.address - base) / MiB, s.size / MiB]);
  return { source, pool, decisions, reserved, runs };
}

describe('expandable segments under memory pressure (PyTorch unmap_block, map_block)', () => {
  it('unmaps the cached pages before it gives up, then grows the end', () => {
    // 100 MiB device. A 40, B 20, C 20 MiB fill 80 MiB of one segment (20 MiB pages); A is freed.
    // D (60 MiB) cannot grow the end (140 MiB): A's pages are unmapped (80 → 40 MiB), and the
    // retry grows the end by 60 MiB (100 MiB). The hole at A (40 MiB, B after it) is too small.
    const { pool, decisions, reserved, runs } = expandablePool(100 * MiB);
    const a = pool.allocate(40 * MiB)!;
    pool.allocate(20 * MiB);
    pool.allocate(20 * MiB);
    pool.free(a);
    const d = pool.allocate(60 * MiB);
    expect(d).toBe(a + 80 * MiB);
    expect(decisions()).toEqual([40, 20, 20, -40, 60]);
    expect(reserved()).toBe(100 * MiB);
    expect(pool.memoryStats().num_alloc_retries).toBe(1);
    expect(runs(a)).toEqual([[40, 100]]);
  });

  it('maps the lowest hole with room before it grows the end', () => {
    const { pool, decisions, reserved, runs } = expandablePool(1024 * MiB);
    const a = pool.allocate(40 * MiB)!;
    pool.allocate(20 * MiB);
    pool.allocate(20 * MiB);
    pool.free(a);
    pool.emptyCache();
    expect(decisions()).toEqual([40, 20, 20, -40]);
    expect(reserved()).toBe(40 * MiB);
    // 30 MiB: no cached block fits; the hole at the start has 40 MiB: two pages are mapped there.
    expect(pool.allocate(30 * MiB)).toBe(a);
    expect(decisions()).toEqual([40, 20, 20, -40, 40]);
    expect(reserved()).toBe(80 * MiB);
    expect(runs(a)).toEqual([[0, 80]]);
  });

  it('maps only the pages a request needs, and the cached block before the hole joins it', () => {
    const { pool, decisions, runs } = expandablePool(1024 * MiB);
    const a = pool.allocate(80 * MiB)!; // pages 0-80
    pool.allocate(20 * MiB); // 80-100
    pool.free(a);
    pool.emptyCache(); // 0-80 unmapped
    const b = pool.allocate(30 * MiB)!; // maps 0-40: 30 used, 10 cached
    expect(b).toBe(a);
    pool.free(b); // 0-40 cached again, 40-80 unmapped
    pool.allocate(10 * MiB); // best fit: the cached 40 MiB block, split
    // 50 MiB: the cached 30 MiB before the hole plus 20 MiB of it (one page) serve it.
    expect(pool.allocate(50 * MiB)).toBe(a + 10 * MiB);
    expect(decisions()).toEqual([80, 20, -80, 40, 20]);
    expect(runs(a)).toEqual([
      [0, 60],
      [80, 20],
    ]);
  });

  it('keeps the partial pages at a cached block’s ends mapped', () => {
    const { pool, decisions, runs, reserved } = expandablePool(1024 * MiB);
    const a = pool.allocate(30 * MiB)!; // segment 0-40, A 0-30
    pool.allocate(25 * MiB); // 30-55, the end grown to 60
    pool.free(a);
    pool.emptyCache(); // pages 0-20 unmapped; 20-30 and 55-60 stay cached
    expect(decisions()).toEqual([40, 20, -20]);
    expect(reserved()).toBe(40 * MiB);
    expect(runs(a)).toEqual([[20, 40]]);
    const free = pool.layout().segments[0]!.blocks.filter((block) => block.free);
    expect(free.map((block) => [(block.address - a) / MiB, block.size / MiB])).toEqual([
      [20, 10],
      [55, 5],
    ]);
  });

  it('gives a segment back once nothing in it is mapped', () => {
    const { source, pool, decisions, reserved } = expandablePool(1024 * MiB);
    const a = pool.allocate(30 * MiB)!;
    const b = pool.allocate(30 * MiB)!;
    pool.free(a);
    pool.free(b);
    pool.emptyCache();
    expect(decisions()).toEqual([40, 20, -60]);
    expect(reserved()).toBe(0);
    expect(source.reservedBytes()).toBe(0);
    expect(source.liveRegionCount).toBe(0);
    expect(pool.layout().segments).toEqual([]);
  });

  it('fails a request it cannot map, with the figures it had after the retry', () => {
    const { pool, reserved } = expandablePool(100 * MiB);
    const a = pool.allocate(40 * MiB)!;
    pool.allocate(60 * MiB);
    pool.free(a);
    // 120 MiB: 40 MiB unmapped, then neither the hole (40) nor the end (+120) fits the device.
    expect(pool.allocate(120 * MiB)).toBeNull();
    expect(reserved()).toBe(60 * MiB);
    expect(pool.memoryStats().num_ooms).toBe(1);
    // The hole is still usable afterwards.
    expect(pool.allocate(40 * MiB)).toBe(a);
    expect(reserved()).toBe(100 * MiB);
  });
});
