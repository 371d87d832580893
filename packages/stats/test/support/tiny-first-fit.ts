/**
 * A tiny address-ordered first fit over a sorted array of blocks, for the tests of this package
 * only: every block (free or live) is kept, so `layout()` is exact. Usable sizes round up to
 * `granule` bytes, so internal waste is visible.
 */
import {
  type Allocator,
  alignUp,
  checkRequest,
  InvalidArgumentError,
  InvalidFreeError,
  type Layout,
  type Usage,
} from '@allot/core';

interface Block {
  address: number;
  size: number;
  free: boolean;
  requested: number;
}

export interface TinyFirstFitOptions {
  readonly capacity: number;
  readonly base?: number;
  readonly alignment?: number;
  readonly granule?: number;
  readonly pool?: string;
}

export function tinyFirstFit(options: TinyFirstFitOptions): Allocator & { layout(): Layout } {
  const base = options.base ?? 0;
  const minimum = options.alignment ?? 8;
  const granule = options.granule ?? 8;
  let blocks: Block[] = [];
  const init = () => {
    blocks = [{ address: base, size: options.capacity, free: true, requested: 0 }];
  };
  init();

  const indexOf = (address: number) => blocks.findIndex((b) => b.address === address);

  return {
    alignment: minimum,
    allocate(size, alignment) {
      const align = checkRequest(size, alignment, minimum);
      const usable = alignUp(size, granule);
      for (let i = 0; i < blocks.length; i++) {
        const b = blocks[i]!;
        if (!b.free) continue;
        const start = alignUp(b.address, align);
        const pad = start - b.address;
        if (pad + usable > b.size) continue;
        const parts: Block[] = [];
        if (pad > 0) parts.push({ address: b.address, size: pad, free: true, requested: 0 });
        parts.push({ address: start, size: usable, free: false, requested: size });
        const rest = b.size - pad - usable;
        if (rest > 0) parts.push({ address: start + usable, size: rest, free: true, requested: 0 });
        blocks.splice(i, 1, ...parts);
        return start;
      }
      return null;
    },
    free(address) {
      const i = indexOf(address);
      if (i < 0) {
        const inside = blocks.some((b) => address > b.address && address < b.address + b.size);
        throw new InvalidFreeError(address, inside ? 'interior-pointer' : 'foreign-address');
      }
      if (blocks[i]!.free) throw new InvalidFreeError(address, 'double-free');
      blocks[i] = { ...blocks[i]!, free: true, requested: 0 };
      let j = i;
      if (j + 1 < blocks.length && blocks[j + 1]!.free) {
        blocks[j]!.size += blocks[j + 1]!.size;
        blocks.splice(j + 1, 1);
      }
      if (j > 0 && blocks[j - 1]!.free) {
        blocks[j - 1]!.size += blocks[j]!.size;
        blocks.splice(j, 1);
        j--;
      }
    },
    usableSize(address) {
      const b = blocks[indexOf(address)];
      if (!b || b.free) throw new InvalidArgumentError('address', address, 'a live block');
      return b.size;
    },
    owns(address) {
      const b = blocks[indexOf(address)];
      return b !== undefined && !b.free;
    },
    usage(): Usage {
      let allocatedBytes = 0;
      let freeBytes = 0;
      let largestFreeBlock = 0;
      let liveCount = 0;
      let freeBlockCount = 0;
      for (const b of blocks) {
        if (b.free) {
          freeBytes += b.size;
          freeBlockCount++;
          largestFreeBlock = Math.max(largestFreeBlock, b.size);
        } else {
          allocatedBytes += b.size;
          liveCount++;
        }
      }
      return {
        capacity: options.capacity,
        allocatedBytes,
        freeBytes,
        overheadBytes: 0,
        largestFreeBlock,
        liveCount,
        freeBlockCount,
      };
    },
    reset: init,
    layout(): Layout {
      return {
        segments: [
          {
            address: base,
            size: options.capacity,
            ...(options.pool ? { pool: options.pool } : {}),
            blocks: blocks.map((b) =>
              b.free
                ? { address: b.address, size: b.size, free: true }
                : { address: b.address, size: b.size, free: false, requestedSize: b.requested },
            ),
          },
        ],
      };
    },
  };
}
