/**
 * Allocators with one deliberate bug each, built on the reference strategy. The suite must catch
 * every one of them, and say which invariant broke.
 */
import { type Allocator, checkRequest, isPowerOfTwo, type Usage } from '@allot/core';
import type { ConformanceOptions } from '../src/options';
import { type ReferenceAllocator, referenceAllocator } from './reference-allocator';

const CAPACITY = 4096;

/** Hands out an existing live block again (aliasing) every third request that one can serve. */
function overlapping(): Allocator {
  const inner = referenceAllocator({ capacity: CAPACITY });
  const aliases = new Map<number, number>();
  let calls = 0;
  return {
    ...inner,
    allocate(size, alignment) {
      calls++;
      if (calls % 3 === 0) {
        const align = Math.max(alignment ?? 8, 8);
        for (const block of inner.layout().segments[0]!.blocks) {
          if (
            !block.free &&
            block.size >= size &&
            block.address % align === 0 &&
            !aliases.has(block.address)
          ) {
            aliases.set(block.address, block.size);
            return block.address;
          }
        }
      }
      return inner.allocate(size, alignment);
    },
    free(address) {
      if (aliases.delete(address)) return;
      inner.free(address);
    },
    usableSize: (address) => aliases.get(address) ?? inner.usableSize(address),
    layout: undefined,
    usage(): Usage {
      const u = inner.usage();
      let extra = 0;
      for (const size of aliases.values()) extra += size;
      return {
        ...u,
        allocatedBytes: u.allocatedBytes + extra,
        freeBytes: u.freeBytes - extra,
        liveCount: u.liveCount + aliases.size,
      };
    },
    reset() {
      aliases.clear();
      inner.reset();
    },
  };
}

/**
 * Keeps its live count in a 4-bit field: right until 16 blocks are live at once, which only a
 * command sequence longer than 16 can reach.
 */
function narrowCounter(): Allocator {
  const inner = referenceAllocator({ capacity: CAPACITY });
  return {
    ...inner,
    usage(): Usage {
      const u = inner.usage();
      return { ...u, liveCount: u.liveCount & 0xf };
    },
  };
}

/** Claims 8-byte alignment but packs blocks at 1-byte granularity and ignores requested alignment. */
function misaligning(): Allocator {
  const inner = referenceAllocator({ capacity: CAPACITY, alignment: 1 });
  return {
    ...inner,
    alignment: 8,
    allocate(size, alignment) {
      checkRequest(size, alignment, 8);
      return inner.allocate(size, 1);
    },
  };
}

/** Reports requested bytes as allocated bytes, though blocks are rounded up to 8. */
function miscounting(): Allocator {
  const inner = referenceAllocator({ capacity: CAPACITY });
  let requested = 0;
  const sizes = new Map<number, number>();
  return {
    ...inner,
    allocate(size, alignment) {
      const address = inner.allocate(size, alignment);
      if (address !== null) {
        requested += size;
        sizes.set(address, size);
      }
      return address;
    },
    free(address) {
      inner.free(address);
      requested -= sizes.get(address) ?? 0;
      sizes.delete(address);
    },
    usage(): Usage {
      const u = inner.usage();
      return {
        ...u,
        allocatedBytes: requested,
        overheadBytes: u.capacity - requested - u.freeBytes,
      };
    },
    reset() {
      inner.reset();
      requested = 0;
      sizes.clear();
    },
  };
}

/** Ignores a free of an address that is not live, instead of throwing InvalidFreeError. */
function acceptsDoubleFree(): Allocator {
  const inner = referenceAllocator({ capacity: CAPACITY });
  return {
    ...inner,
    free(address) {
      if (inner.owns(address)) inner.free(address);
    },
  };
}

/** Refuses any request above a quarter of the capacity, even when a free block would hold it. */
function refusesFittingRequests(): Allocator {
  const inner = referenceAllocator({ capacity: CAPACITY });
  return {
    ...inner,
    allocate(size, alignment) {
      checkRequest(size, alignment, 8);
      return size > CAPACITY / 4 ? null : inner.allocate(size, alignment);
    },
  };
}

/** Never merges freed neighbours, yet promises to coalesce. */
function neverCoalesces(): Allocator {
  return referenceAllocator({ capacity: CAPACITY, coalesce: false });
}

/** Places blocks from the top on every other instance: same calls, different addresses. */
let instances = 0;
function nondeterministic(): Allocator {
  const flip = instances++ % 2 === 1;
  const inner = referenceAllocator({ capacity: CAPACITY });
  if (!flip) return inner;
  const pad = inner.allocate(64);
  if (pad === null) throw new Error('unreachable');
  // The padding block makes every later address differ; hide it from the figures.
  return {
    ...inner,
    usage(): Usage {
      const u = inner.usage();
      return {
        ...u,
        capacity: u.capacity - 64,
        allocatedBytes: u.allocatedBytes - 64,
        liveCount: u.liveCount - 1,
      };
    },
    layout: undefined,
    reset() {
      inner.reset();
      inner.allocate(64);
    },
  };
}

/** Reserves the block before it validates the alignment, so a rejected call leaks memory. */
function leaksOnMisuse(): Allocator {
  const inner = referenceAllocator({ capacity: CAPACITY });
  return {
    ...inner,
    allocate(size, alignment) {
      if (
        Number.isSafeInteger(size) &&
        size > 0 &&
        alignment !== undefined &&
        !isPowerOfTwo(alignment)
      ) {
        inner.allocate(size); // the bug: state changes before the argument check below
      }
      return inner.allocate(size, alignment);
    },
  };
}

/** Correct bookkeeping, but its memory aliases: two halves of the range map to the same bytes. */
function aliasedMemory(): {
  allocator: ReferenceAllocator;
  view: (a: number, n: number) => Uint8Array;
} {
  const allocator = referenceAllocator({ capacity: CAPACITY });
  const bytes = new Uint8Array(CAPACITY / 2);
  return {
    allocator,
    view: (address, size) => {
      const start = address % (CAPACITY / 2);
      return start + size <= bytes.length
        ? bytes.subarray(start, start + size)
        : new Uint8Array(size);
    },
  };
}

export interface BrokenCase {
  readonly bug: string;
  readonly expected: string;
  readonly options: ConformanceOptions;
}

const base = { maxRequestSize: 512, alignments: [1, 8, 64] } as const;

export const brokenCases: readonly BrokenCase[] = [
  {
    bug: 'overlapping blocks',
    expected: 'no-overlap',
    options: { name: 'overlapping', create: overlapping, capabilities: base },
  },
  {
    bug: 'misaligned blocks',
    expected: 'alignment',
    options: { name: 'misaligning', create: misaligning, capabilities: base },
  },
  {
    bug: 'mis-counted bytes',
    expected: 'accounting',
    options: { name: 'miscounting', create: miscounting, capabilities: base },
  },
  {
    bug: 'a live count that wraps at 16',
    expected: 'accounting',
    options: { name: 'narrow-counter', create: narrowCounter, capabilities: base },
  },
  {
    bug: 'accepted double free',
    expected: 'misuse',
    options: { name: 'double-free', create: acceptsDoubleFree, capabilities: base },
  },
  {
    bug: 'refused a request that fits',
    expected: 'completeness',
    options: {
      name: 'refuses',
      create: refusesFittingRequests,
      capabilities: { ...base, complete: true, maximalAllocation: false },
    },
  },
  {
    bug: 'no coalescing',
    expected: 'restores-initial-state',
    options: {
      name: 'no-coalescing',
      create: neverCoalesces,
      capabilities: {
        ...base,
        coalesces: true,
        restoresInitialUsage: false,
        maximalAllocation: false,
      },
    },
  },
  {
    bug: 'nondeterministic placement',
    expected: 'determinism',
    options: { name: 'nondeterministic', create: nondeterministic, capabilities: base },
  },
  {
    bug: 'state changed by a rejected call',
    expected: 'misuse',
    options: { name: 'leaks-on-misuse', create: leaksOnMisuse, capabilities: base },
  },
  {
    bug: 'aliased memory',
    expected: 'byte-pattern',
    options: { name: 'aliased-memory', create: aliasedMemory, capabilities: base },
  },
  {
    bug: 'first fit that is not first',
    expected: 'placement',
    options: {
      name: 'not-first-fit',
      create: () => {
        const inner = referenceAllocator({ capacity: CAPACITY });
        // Allocates from the end of the largest free block: a valid allocator, but not first fit.
        return {
          ...inner,
          allocate(size, alignment) {
            const probe = inner.allocate(size, alignment);
            if (probe === null) return null;
            inner.free(probe);
            const u = inner.usage();
            const filler = u.largestFreeBlock > size + 64 ? inner.allocate(64) : null;
            const address = inner.allocate(size, alignment);
            if (filler !== null) inner.free(filler);
            return address;
          },
        };
      },
      capabilities: { ...base, placement: 'first-fit' },
    },
  },
];
