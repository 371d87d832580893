/**
 * A deliberately simple, obviously correct address-ordered first fit over sorted arrays (O(n) per
 * call). It exists only to test the suite and the core combinators; it is not a product.
 */
import {
  type Allocator,
  alignUp,
  checkRequest,
  InvalidArgumentError,
  InvalidFreeError,
  type Layout,
  type LayoutBlock,
  type Usage,
} from '@allot/core';

export interface ReferenceOptions {
  readonly capacity: number;
  readonly base?: number;
  readonly alignment?: number;
  /** Merge freed blocks with free neighbours. @defaultValue true */
  readonly coalesce?: boolean;
}

export interface ReferenceAllocator extends Allocator {
  layout(): Layout;
}

export function referenceAllocator(options: ReferenceOptions): ReferenceAllocator {
  const base = options.base ?? 0;
  const min = options.alignment ?? 8;
  const capacity = options.capacity;
  const coalesce = options.coalesce ?? true;
  // Free ranges sorted by address; live blocks by address → [size, requested].
  let free: { address: number; size: number }[] = [{ address: base, size: capacity }];
  let live = new Map<number, { size: number; requested: number }>();
  let allocated = 0;

  const self: ReferenceAllocator = {
    alignment: min,
    allocate(size, alignment) {
      const align = checkRequest(size, alignment, min);
      const need = alignUp(size, min);
      for (let i = 0; i < free.length; i++) {
        const f = free[i]!;
        const start = alignUp(f.address, align);
        if (start + need > f.address + f.size) continue;
        const pieces: { address: number; size: number }[] = [];
        if (start > f.address) pieces.push({ address: f.address, size: start - f.address });
        const end = start + need;
        if (end < f.address + f.size) pieces.push({ address: end, size: f.address + f.size - end });
        free.splice(i, 1, ...pieces);
        live.set(start, { size: need, requested: size });
        allocated += need;
        return start;
      }
      return null;
    },
    free(address) {
      const block = live.get(address);
      if (!block) {
        const inside = [...live.entries()].some(([a, b]) => address > a && address < a + b.size);
        const inRange = address >= base && address < base + capacity;
        throw new InvalidFreeError(
          address,
          inside ? 'interior-pointer' : inRange ? 'not-live' : 'foreign-address',
        );
      }
      live.delete(address);
      allocated -= block.size;
      let index = free.findIndex((f) => f.address > address);
      if (index < 0) index = free.length;
      free.splice(index, 0, { address, size: block.size });
      if (coalesce) {
        const next = free[index + 1];
        if (next && address + block.size === next.address) {
          free[index]!.size += next.size;
          free.splice(index + 1, 1);
        }
        const prev = free[index - 1];
        if (prev && prev.address + prev.size === address) {
          prev.size += free[index]!.size;
          free.splice(index, 1);
        }
      }
    },
    usableSize(address) {
      const block = live.get(address);
      if (!block) throw new InvalidArgumentError('address', address, 'the start of a live block');
      return block.size;
    },
    owns: (address) => live.has(address),
    usage(): Usage {
      let freeBytes = 0;
      let largest = 0;
      for (const f of free) {
        freeBytes += f.size;
        if (f.size > largest) largest = f.size;
      }
      return {
        capacity,
        allocatedBytes: allocated,
        freeBytes,
        overheadBytes: capacity - allocated - freeBytes,
        largestFreeBlock: largest,
        liveCount: live.size,
        freeBlockCount: free.length,
      };
    },
    reset() {
      free = [{ address: base, size: capacity }];
      live = new Map();
      allocated = 0;
    },
    layout(): Layout {
      const blocks: LayoutBlock[] = [
        ...free.map((f) => ({ address: f.address, size: f.size, free: true })),
        ...[...live].map(([address, b]) => ({
          address,
          size: b.size,
          free: false,
          requestedSize: b.requested,
        })),
      ].sort((x, y) => x.address - y.address);
      return { segments: [{ address: base, size: capacity, blocks }] };
    },
  };
  return self;
}
