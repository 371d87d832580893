import { describe, expect, it } from 'vitest';
import { type CompactingAllocator, checkCompactionAsync } from '../src/compaction';
import { referenceAllocator } from './reference-allocator';

/** Plans to slide the first live block after a gap down into it, but never updates its books. */
function forgetfulCompactor(): CompactingAllocator {
  const inner = referenceAllocator({ capacity: 4096 });
  return {
    ...inner,
    compact() {
      const blocks = inner.layout().segments[0]!.blocks;
      const gap = blocks.find((b) => b.free);
      const next = gap && blocks.find((b) => !b.free && b.address > gap.address);
      return {
        moves: gap && next ? [{ from: next.address, to: gap.address, size: next.size }] : [],
      };
    },
    applyCompaction() {},
  };
}

/** Plans no moves at all: its free space never comes together. */
function idleCompactor(): CompactingAllocator {
  const inner = referenceAllocator({ capacity: 4096 });
  return { ...inner, compact: () => ({ moves: [] }), applyCompaction() {} };
}

describe('checkCompactionAsync catches broken compaction', () => {
  it.each([
    ['bookkeeping that ignores the plan', forgetfulCompactor, /not live at/],
    ['plans that never gather the free space', idleCompactor, /not one at the end/],
  ])('%s', async (_bug, create, message) => {
    let error: unknown;
    try {
      await checkCompactionAsync({ name: 'broken', create, maxRequestSize: 512, numRuns: 200 });
    } catch (e) {
      error = e;
    }
    expect(String(error)).toContain('[compaction]');
    expect(String(error)).toMatch(message);
  });
});
