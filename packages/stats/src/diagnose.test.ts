import { OutOfMemoryError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import { tinyFirstFit } from '../test/support/tiny-first-fit';
import { diagnose, outOfMemoryError } from './diagnose';

describe('diagnose', () => {
  it('tells exhaustion from fragmentation on a layout', () => {
    const layout = {
      segments: [
        {
          address: 0,
          size: 4096,
          blocks: [
            { address: 0, size: 1024, free: true },
            { address: 1024, size: 1024, free: false },
            { address: 2048, size: 1024, free: true },
            { address: 3072, size: 1024, free: false },
          ],
        },
      ],
    };
    const f = diagnose(layout, 2048);
    expect(f).toMatchObject({
      reason: 'fragmentation',
      cause: 'fragmentation',
      freeBytes: 2048,
      largestFreeBlock: 1024,
      capacity: 4096,
      shortfall: 0,
      externalFragmentation: 0.5,
      utilisation: 0.5,
    });
    expect(f.summary).toMatch(/^Fragmentation: requested 2\.00 KiB/);
    const e = diagnose(layout, 3000);
    expect(e).toMatchObject({ reason: 'exhaustion', cause: 'exhaustion', shortfall: 3000 - 2048 });
    expect(e.summary).toMatch(/^Exhaustion/);
  });

  it('sees alignment and strategy rules as the cause when a block is large enough', () => {
    const layout = {
      segments: [
        {
          address: 0,
          size: 2048,
          blocks: [
            { address: 0, size: 8, free: false },
            { address: 8, size: 1032, free: true },
            { address: 1040, size: 1008, free: false },
          ],
        },
      ],
    };
    const aligned = diagnose(layout, 1024, 1024);
    expect(aligned.cause).toBe('alignment');
    expect(aligned.largestAlignedFit).toBe(16);
    expect(aligned.reason).toBe('fragmentation');
    expect(diagnose(layout, 1000).cause).toBe('policy');
  });

  it('works from usage alone and from an allocator', () => {
    const usage = {
      capacity: 100,
      allocatedBytes: 60,
      freeBytes: 40,
      overheadBytes: 0,
      largestFreeBlock: 30,
      liveCount: 3,
      freeBlockCount: 2,
    };
    expect(diagnose(usage, 35).cause).toBe('fragmentation');
    expect(diagnose(usage, 35).fragmentation).toBeUndefined();
    expect(diagnose(usage, 45).cause).toBe('exhaustion');
    const allocator = tinyFirstFit({ capacity: 1024, alignment: 16 });
    allocator.allocate(1000);
    const d = diagnose(allocator, 100);
    expect(d.alignment).toBe(16);
    expect(d.fragmentation?.liveCount).toBe(1);
  });

  it('builds an OutOfMemoryError that carries the diagnosis', () => {
    const allocator = tinyFirstFit({ capacity: 1024 });
    allocator.allocate(1000);
    const error = outOfMemoryError(allocator, 512);
    expect(OutOfMemoryError.isInstance(error)).toBe(true);
    expect(error.reason).toBe('exhaustion');
    expect(error.detail).toContain('Exhaustion');
    expect((error.diagnosis as { requested: number }).requested).toBe(512);
  });
});
