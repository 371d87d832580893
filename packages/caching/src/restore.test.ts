import { InvalidArgumentError } from '@allot/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, parseAllocConf } from './alloc-conf';
import { cachingPool } from './caching-pool';
import { formatAllocConf } from './format-alloc-conf';
import type { PoolStateSegment } from './pool-state';
import { KiB, MiB, recordingSource } from './test-support/recording-source';

function snapshotOf(pool: ReturnType<typeof cachingPool>) {
  return JSON.stringify({
    usage: pool.usage(),
    layout: pool.layout(),
    stats: pool.memoryStats(),
  });
}

describe('restore: a starting state', () => {
  it('re-creates segments and live blocks; the gaps are cached and merge on free', () => {
    const source = recordingSource();
    const pool = cachingPool({ source });
    const addresses = pool.restore([
      {
        size: 20 * MiB,
        pool: 'large',
        blocks: [
          { offset: 0, requested: 3 * MiB },
          { offset: 8 * MiB, requested: 5_000_000 },
        ],
      },
      { size: 2 * MiB, pool: 'small', blocks: [{ offset: 4 * KiB, requested: 100 }] },
    ])!;
    expect(source.acquired).toEqual([20 * MiB, 2 * MiB]);
    const [large, small] = addresses as [number[], number[]];
    const base = large[0]!;
    expect(large).toEqual([base, base + 8 * MiB]);
    // 5,000,000 B rounds to 5,000,192 B; the 6.2 MiB after it is over 1 MiB, so it stays free.
    expect(pool.usableSize(large[1]!)).toBe(5_000_192);
    expect(pool.usableSize(small[0]!)).toBe(512);
    const blocks = pool.layout().segments.flatMap((s) => s.blocks.map((b) => [b.size, b.free]));
    expect(blocks).toEqual([
      [3 * MiB, false],
      [5 * MiB, true],
      [5_000_192, false],
      [12 * MiB - 5_000_192, true],
      [4 * KiB, true],
      [512, false],
      [2 * MiB - 4 * KiB - 512, true],
    ]);
    const stats = pool.memoryStats();
    expect(stats['segment.all.current']).toBe(2);
    expect(stats['num_device_alloc']).toBe(2);
    expect(stats['reserved_bytes.all.current']).toBe(22 * MiB);
    expect(stats['allocated_bytes.all.current']).toBe(3 * MiB + 5_000_192 + 512);
    expect(stats['requested_bytes.all.current']).toBe(3 * MiB + 5_000_000 + 100);
    // The cached gap serves a request that fits it, without a new segment.
    const reuse = pool.allocate(4 * MiB)!;
    expect(reuse).toBe(base + 3 * MiB);
    expect(source.acquired).toHaveLength(2);
    // Freeing everything merges each segment back into one free block.
    for (const address of [...large, ...small, reuse]) pool.free(address);
    expect(pool.layout().segments.map((s) => s.blocks.length)).toEqual([1, 1]);
    expect(pool.usage().allocatedBytes).toBe(0);
  });

  it('keeps a large remainder of 1 MiB or less with the block, as the split rule would have', () => {
    const pool = cachingPool({ source: recordingSource() });
    const [[a, b]] = pool.restore([
      {
        size: 20 * MiB,
        pool: 'large',
        blocks: [
          { offset: 0, requested: 9 * MiB + 100 },
          { offset: 10 * MiB, requested: 2 * MiB },
        ],
      },
    ])! as [number[]];
    expect(pool.usableSize(a!)).toBe(10 * MiB); // the 1,048,064 B gap is not a block of its own
    expect(pool.usableSize(b!)).toBe(2 * MiB);
  });

  it('uses a recorded block size as it is', () => {
    const pool = cachingPool({ source: recordingSource() });
    const [[a]] = pool.restore([
      { size: 2 * MiB, pool: 'small', blocks: [{ offset: 0, requested: 10, size: 4 * KiB }] },
    ])! as [number[]];
    expect(pool.usableSize(a!)).toBe(4 * KiB);
  });

  it('keeps growing a restored expandable segment in place', () => {
    const source = recordingSource({ growable: true, maxRegionSize: 256 * MiB });
    const pool = cachingPool({ source, config: 'expandable_segments:True' });
    const [[a]] = pool.restore([
      {
        size: 20 * MiB,
        pool: 'large',
        expandable: true,
        blocks: [{ offset: 0, requested: 18 * MiB }],
      },
    ])! as [number[]];
    const b = pool.allocate(10 * MiB)!;
    expect(b).toBe(a! + 18 * MiB);
    expect(source.log).toEqual(['acquire 20 MiB', 'grow 20 MiB → 40 MiB']);
  });

  it('refuses a malformed state with a typed error, and changes nothing', () => {
    const pool = cachingPool({ source: recordingSource() });
    pool.allocate(4 * MiB);
    const before = snapshotOf(pool);
    const bad: PoolStateSegment[][] = [
      [{ size: 0, pool: 'large', blocks: [] }],
      [{ size: 20 * MiB + 1, pool: 'large', blocks: [] }],
      [{ size: 20 * MiB, pool: 'huge' as 'large', blocks: [] }],
      [{ size: 20 * MiB, pool: 'large', stream: -1, blocks: [] }],
      [{ size: 20 * MiB, pool: 'large', blocks: [{ offset: 100, requested: 1 }] }],
      [{ size: 2 * MiB, pool: 'small', blocks: [{ offset: 0, requested: 3 * MiB }] }],
      [
        {
          size: 20 * MiB,
          pool: 'large',
          blocks: [
            { offset: 0, requested: 2 * MiB },
            { offset: MiB, requested: 2 * MiB },
          ],
        },
      ],
      [{ size: 2 * MiB, pool: 'small', blocks: [{ offset: 0, requested: 600, size: 512 }] }],
      [{ size: 2 * MiB, pool: 'small', blocks: [{ offset: 0, requested: 0 }] }],
    ];
    for (const state of bad) {
      expect(() => pool.restore(state), JSON.stringify(state)).toThrow(InvalidArgumentError);
      expect(snapshotOf(pool)).toBe(before);
    }
  });

  it('returns null, and changes nothing, when the source cannot hold the state', () => {
    const source = recordingSource({ limit: 30 * MiB });
    const pool = cachingPool({ source });
    const before = snapshotOf(pool);
    const state: PoolStateSegment[] = [
      { size: 20 * MiB, pool: 'large', blocks: [] },
      { size: 20 * MiB, pool: 'large', blocks: [] },
    ];
    expect(pool.restore(state)).toBeNull();
    expect(snapshotOf(pool)).toBe(before);
    expect(source.reservedBytes()).toBe(0);
  });
});

describe('expandable segments: best fit weighs the growing end as PyTorch does', () => {
  it('uses a larger cached block elsewhere before the free end of the segment', () => {
    const source = recordingSource({ growable: true, maxRegionSize: 256 * MiB });
    const pool = cachingPool({ source, config: 'expandable_segments:True' });
    const a = pool.allocate(4 * MiB)!;
    const b = pool.allocate(8 * MiB)!;
    pool.allocate(2 * MiB);
    pool.free(b); // 8 MiB free between two live blocks; 6 MiB free at the end of the 20 MiB
    // Plain best fit would take the 6 MiB end; PyTorch counts the end as able to grow, so larger.
    expect(pool.allocate(5 * MiB)).toBe(a + 4 * MiB);
    expect(source.log).toEqual(['acquire 20 MiB']);
  });
});

describe('max_split_size_mb with expandable segments, as PyTorch 2.11 does it', () => {
  it('splits an oversize block, and serves a small request from an oversize free end', () => {
    const source = recordingSource({ growable: true, maxRegionSize: 256 * MiB });
    const pool = cachingPool({ source, config: 'max_split_size_mb:20,expandable_segments:True' });
    const big = pool.allocate(30 * MiB)!;
    // should_split: with expandable segments any remainder of 512 B or more is split off, however
    // large the block; plain segments would keep a 30 MiB block whole.
    expect(pool.usableSize(big)).toBe(30 * MiB);
    pool.free(big);
    // get_free_block refuses the 40 MiB free end for a request under max_split_size, but
    // try_allocate_expandable_block takes it without mapping more: no growth, same address.
    expect(pool.allocate(5 * MiB)).toBe(big);
    expect(source.log).toEqual(['acquire 40 MiB']);
    expect(pool.usage().capacity).toBe(40 * MiB);
  });
});

describe('typed settings', () => {
  it('takes settings instead of a string, and gives the canonical string back', () => {
    const settings = { ...DEFAULT_SETTINGS, maxSplitSize: 128 * MiB, expandableSegments: true };
    const pool = cachingPool({ source: recordingSource(), settings });
    expect(pool.config).toBe('max_split_size_mb:128,expandable_segments:True');
    expect(pool.settings).toEqual(parseAllocConf(pool.config));
    expect(() =>
      cachingPool({
        source: recordingSource(),
        settings: { ...DEFAULT_SETTINGS, maxSplitSize: MiB },
      }),
    ).toThrow(InvalidArgumentError);
  });

  it('formats the defaults as the empty string and lists only what differs', () => {
    expect(formatAllocConf(DEFAULT_SETTINGS)).toBe('');
    const list = 'roundup_power2_divisions:[256:1,512:2,>:8]';
    expect(formatAllocConf(parseAllocConf(list))).toBe(list);
    expect(
      formatAllocConf(parseAllocConf('max_split_size_mb:128,roundup_power2_divisions:4')),
    ).toBe('max_split_size_mb:128,roundup_power2_divisions:4');
  });

  it('round-trips: parse(format(settings)) gives the same settings (property)', () => {
    const divisions = fc.constantFrom(0, 1, 2, 4, 8, 16, 32);
    const settings = fc.record({
      maxSplitSize: fc.oneof(
        fc.constant(Number.POSITIVE_INFINITY),
        fc.integer({ min: 20, max: 8192 }).map((mb) => mb * MiB),
      ),
      maxNonSplitRounding: fc.integer({ min: 20, max: 4096 }).map((mb) => mb * MiB),
      roundupPower2Divisions: fc.oneof(
        divisions.map((d) => new Array<number>(16).fill(d)),
        fc.array(divisions, { minLength: 16, maxLength: 16 }),
      ),
      garbageCollectionThreshold: fc.oneof(
        fc.constant(0),
        fc.double({ min: 0.01, max: 0.99, noNaN: true }),
      ),
      expandableSegments: fc.boolean(),
      backend: fc.constantFrom('native' as const, 'cudaMallocAsync' as const),
      memoryFraction: fc.oneof(
        fc.constant(undefined),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
      ),
    });
    fc.assert(
      fc.property(settings, (drawn) => {
        const text = formatAllocConf(drawn);
        const parsed = parseAllocConf(text);
        expect(parsed).toMatchObject({ ...drawn });
        expect(formatAllocConf(parsed)).toBe(text);
      }),
      { numRuns: Number(process.env.FC_NUM_RUNS ?? 200), seed: Number(process.env.FC_SEED ?? 13) },
    );
  });
});
