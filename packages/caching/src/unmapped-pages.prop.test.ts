/**
 * Expandable segments that unmap under pressure keep every figure in step: whatever the calls, the
 * reserved bytes the pool counts are those the device (source) has mapped, the layout's mapped runs
 * add up to them, `freeSpace()` agrees with the layout's free blocks, live blocks never overlap and
 * keep their addresses, and every live block lies in mapped memory.
 */
import { assertYielding, propertyParameters } from '@allot/testkit';
import { addressSource } from '@allot/workloads';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cachingPool } from './caching-pool';

const MiB = 2 ** 20;

const size = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(1 * MiB, 3 * MiB, 19 * MiB, 21 * MiB, 40 * MiB) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 70 * MiB }) },
);

const op = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('alloc' as const), size }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'emptyCache' as const }) },
);

describe('expandable segments that unmap under pressure', () => {
  it('keep reserved bytes, mapped runs and live blocks consistent', async () => {
    await assertYielding(
      fc.property(
        fc.integer({ min: 3, max: 12 }),
        fc.array(op, { maxLength: 120 }),
        (pages, ops) => {
          const source = addressSource({ limit: pages * 20 * MiB, growable: true });
          const pool = cachingPool({ source, config: 'expandable_segments:True' });
          const live = new Map<number, number>();
          for (const o of ops) {
            if (o.kind === 'alloc') {
              const address = pool.allocate(o.size);
              if (address === null) continue;
              expect(live.has(address)).toBe(false);
              live.set(address, o.size);
            } else if (o.kind === 'free') {
              if (live.size === 0) continue;
              const address = [...live.keys()][o.pick % live.size]!;
              live.delete(address);
              pool.free(address);
            } else {
              pool.emptyCache();
            }
            const reserved = pool.memoryStats()['reserved_bytes.all.current'];
            expect(source.reservedBytes()).toBe(reserved);
            expect(reserved).toBeLessThanOrEqual(pages * 20 * MiB);
            const segments = pool.layout().segments;
            expect(segments.reduce((sum, s) => sum + s.size, 0)).toBe(reserved);
            // freeSpace() reads the layout's free blocks without building it.
            const free = segments.flatMap((s) => s.blocks.filter((b) => b.free).map((b) => b.size));
            expect(pool.freeSpace()).toEqual({
              freeBytes: free.reduce((sum, b) => sum + b, 0),
              largestFreeBlock: Math.max(0, ...free),
            });
            const used = segments
              .flatMap((s) => s.blocks.filter((b) => !b.free).map((b) => [b.address, b.size]))
              .sort((x, y) => x[0]! - y[0]!);
            for (let i = 1; i < used.length; i++) {
              expect(used[i]![0]!).toBeGreaterThanOrEqual(used[i - 1]![0]! + used[i - 1]![1]!);
            }
            expect(used.map((u) => u[0])).toEqual([...live.keys()].sort((x, y) => x - y));
            for (const [address, bytes] of live) {
              const at = used.find((u) => u[0] === address)!;
              expect(at[1]!).toBeGreaterThanOrEqual(bytes);
            }
          }
        },
      ),
      propertyParameters({}),
    );
  });
});
