/**
 * The state of a fit allocator and its hot paths: `allocate`, `free`, splitting and coalescing, and
 * the classification of a refused free. `fit-allocator.ts` adds the rest of the contract on top
 * (lookups, figures, layout, compaction); its module comment describes the design.
 */
import {
  checkAlignment,
  checkNonNegativeInteger,
  checkRequest,
  checkSize,
  InvalidArgumentError,
  InvalidFreeError,
  type InvalidFreeReason,
} from '@allot/core';
import { AddressMap } from './address-map';
import { BlockTable } from './block-table';
import { FREE, LIVE, NIL, RECENT_FREES } from './constants';
import { type FreeIndex, type FreeIndexFactory, paddingFor } from './free-index';

/** Minimum alignment (granule) when none is given, in bytes. */
export const DEFAULT_ALIGNMENT = 8;

export interface FitOptions {
  /** Bytes in the managed range, a positive safe integer (up to 2^53 − base). */
  readonly capacity: number;
  /** Address of the first byte of the range, a non-negative safe integer. @defaultValue 0 */
  readonly base?: number;
  /**
   * Minimum alignment of every block, in bytes (a power of two). Request sizes are rounded up to a
   * multiple of it.
   * @defaultValue 8
   */
  readonly alignment?: number;
}

/** A fit allocator's state and hot paths; `FitAllocator` is the class to use. */
export abstract class FitEngine {
  // Every field is `declare`d and assigned once in the constructor: no `undefined` first, so V8
  // keeps number fields unboxed and the hot paths free of representation checks.
  /** Minimum alignment of every returned address, in bytes. */
  declare readonly alignment: number;
  /** First byte of the managed range. */
  declare readonly base: number;
  /** Bytes in the managed range. */
  declare readonly capacity: number;
  /** The block table (read-only for callers: change it only through this allocator). */
  declare readonly table: BlockTable;
  declare protected readonly index: FreeIndex;
  declare protected readonly live: AddressMap;
  /**
   * The block allocated last, while it is not yet in {@link live}: its key (NaN, which equals no
   * key, when there is none) and slot.
   * It goes into the map at the next allocation; a free of it before then (a same-size loop)
   * touches no map at all.
   */
  declare protected pendingKey: number;
  declare protected pendingSlot: number;
  /** The last block of the range when it is free (kept out of the index), else {@link NIL}. */
  declare protected top: number;
  declare protected readonly end: number;
  /**
   * The alignment a default request searches with: 1 (every boundary is a multiple of the granule,
   * no padding to look for) when the base is aligned to the granule, else the granule.
   */
  declare protected readonly search: number;
  declare protected readonly inverseGranule: number;
  declare protected readonly recent: Float64Array;
  declare protected recentAt: number;
  declare protected allocatedBytes: number;
  declare protected freeBlocks: number;
  declare protected generationCount: number;

  constructor(options: FitOptions, index: FreeIndexFactory) {
    if (options === null || typeof options !== 'object') {
      throw new InvalidArgumentError('options', options, 'an object with a capacity');
    }
    const { capacity, base = 0, alignment = DEFAULT_ALIGNMENT } = options;
    checkSize(capacity, 'capacity');
    checkNonNegativeInteger(base, 'base');
    checkAlignment(alignment);
    if (!Number.isSafeInteger(base + capacity)) {
      throw new InvalidArgumentError('capacity', capacity, `base + capacity ≤ 2^53 (base ${base})`);
    }
    this.capacity = capacity;
    this.base = base;
    this.alignment = alignment;
    this.end = base + capacity;
    this.search = paddingFor(base, alignment) === 0 ? 1 : alignment;
    this.inverseGranule = 1 / alignment;
    this.table = new BlockTable();
    this.live = new AddressMap();
    this.pendingKey = Number.NaN;
    this.pendingSlot = NIL;
    this.recent = new Float64Array(RECENT_FREES);
    this.recentAt = 0;
    this.allocatedBytes = 0;
    this.freeBlocks = 0;
    this.generationCount = 0;
    this.top = NIL;
    this.index = index(this.table, alignment);
    this.reset();
  }

  /** Changes made so far; a compaction plan is valid only for the generation it was made in. */
  get generation(): number {
    return this.generationCount;
  }

  allocate(size: number, alignment?: number): number | null {
    // The common call (a positive safe integer size, the default alignment) in a few
    // instructions; anything else, checked or refused, out of line.
    if (
      (alignment !== undefined && alignment !== this.alignment) ||
      !(Number.isSafeInteger(size) && size > 0)
    ) {
      return this.allocateChecked(size, alignment);
    }
    // File the block allocated last first: its table probe, often a cache miss on a random mix,
    // then overlaps the search instead of stalling the end of the allocation.
    if (this.pendingKey >= 0) {
      this.live.set(this.pendingKey, this.pendingSlot);
      this.pendingKey = Number.NaN;
    }
    // Multiplying by 1/g is exact (g is a power of two) and cheaper than dividing.
    const need = Math.ceil(size * this.inverseGranule) * this.alignment;
    // Every byte is live or free (no overhead): what is not allocated is free.
    if (need > this.capacity - this.allocatedBytes) return null;
    const b = this.index.find(need, this.search, this.top);
    return b === NIL ? null : this.carve(b, need, size, this.alignment, this.search);
  }

  /** {@link allocate} with an alignment, or a size to check: throws, or carves as asked. */
  protected allocateChecked(size: number, alignment: number | undefined): number | null {
    const g = this.alignment;
    const align = checkRequest(size, alignment, g);
    const need = Math.ceil(size * this.inverseGranule) * g;
    if (need > this.capacity - this.allocatedBytes) return null;
    // Every boundary is a multiple of the granule when the base is: no padding to look for.
    const search = align === g ? this.search : align;
    const b = this.index.find(need, search, this.top);
    return b === NIL ? null : this.carve(b, need, size, align, search);
  }

  free(address: number): void {
    if (typeof address !== 'number') throw this.invalidFree(address);
    const key = (address - this.base) * this.inverseGranule;
    let b: number;
    if (key === this.pendingKey) {
      b = this.pendingSlot;
      this.pendingKey = Number.NaN;
    } else {
      b = this.live.take(key);
      if (b === NIL) throw this.invalidFree(address);
    }
    const t = this.table;
    const size = t.size[b]!;
    this.allocatedBytes -= size;
    this.generationCount++;
    this.recent[this.recentAt] = address;
    this.recentAt = (this.recentAt + 1) & (RECENT_FREES - 1);
    const n = t.next[b]!;
    const p = t.prev[b]!;
    if (n !== NIL && t.state[n] === FREE && (p === NIL || t.state[p] !== FREE)) {
      // Only the block after is free (a block freed right after its allocation split it off):
      // that block grows down over this one and keeps its slot and its place among free blocks.
      t.address[n] = address;
      t.size[n] = t.size[n]! + size;
      t.unlink(b);
      if (n !== this.top) this.index.update(n);
      return;
    }
    this.coalesce(b, size, p, n);
  }

  /** The rest of {@link free} of block `b` (`size` bytes, neighbours `p` and `n`): merges or files it. */
  protected coalesce(b: number, size: number, p: number, n: number): void {
    const t = this.table;
    const sizes = t.size;
    const nextFree = n !== NIL && t.state[n] === FREE;
    if (p === NIL || t.state[p] !== FREE) {
      // Neither neighbour is free (the block after is not, or the free above would have taken it).
      t.state[b] = FREE;
      if (n === NIL) this.top = b;
      else this.index.insert(b);
      this.freeBlocks++;
      return;
    }
    // The merged block keeps p's slot; it is the new top when it reaches the end of the range.
    let last = n === NIL;
    if (nextFree) {
      if (n === this.top) last = true;
      else this.index.remove(n);
      sizes[p] = sizes[p]! + size + sizes[n]!;
      t.unlink(n);
      this.freeBlocks--;
    } else {
      sizes[p] = sizes[p]! + size;
    }
    t.unlink(b);
    if (last) {
      this.index.remove(p);
      this.top = p;
    } else {
      this.index.update(p);
    }
  }

  reset(): void {
    this.live.clear();
    this.pendingKey = Number.NaN;
    this.index.clear();
    this.top = this.table.reset(this.base, this.capacity, FREE);
    this.allocatedBytes = 0;
    this.freeBlocks = 1;
    this.recent.fill(Number.NaN);
    this.generationCount++;
  }

  /**
   * Takes `need` bytes from free block `b` at an address aligned to `search` (1: already aligned),
   * records `align` for compaction; returns the address. The common case, a block that needs no
   * padding and is split, is written out here; the others are {@link carveWhole} and
   * {@link carvePadded}.
   */
  protected carve(
    b: number,
    need: number,
    requested: number,
    align: number,
    search: number,
  ): number {
    const t = this.table;
    const at = t.address[b]!;
    const rest = t.size[b]! - need;
    if (rest === 0) return this.carveWhole(b, need, requested, align);
    if (search !== 1 && paddingFor(at, search) !== 0) {
      return this.carvePadded(b, need, requested, align, search);
    }
    // The remainder keeps the slot (and stays the top when it was).
    const live = t.insertBefore(b, at, need, LIVE);
    t.address[b] = at + need;
    t.size[b] = rest;
    if (b !== this.top) this.index.update(b);
    this.placed(live, at, need, requested, align);
    return at;
  }

  /** {@link carve} of a block that fits the request exactly, with no padding. */
  protected carveWhole(b: number, need: number, requested: number, align: number): number {
    const t = this.table;
    if (b === this.top) this.top = NIL;
    else this.index.remove(b);
    t.state[b] = LIVE;
    this.freeBlocks--;
    const at = t.address[b]!;
    this.placed(b, at, need, requested, align);
    return at;
  }

  /** {@link carve} of a block whose address needs padding to `search`. */
  protected carvePadded(
    b: number,
    need: number,
    requested: number,
    align: number,
    search: number,
  ): number {
    const t = this.table;
    const address = t.address[b]!;
    const pad = paddingFor(address, search);
    const rest = t.size[b]! - pad - need;
    const at = address + pad;
    const fromTop = b === this.top;
    // The padding keeps the slot (same address, smaller): its order among free blocks holds. A
    // padded top is no longer last: it is filed, and the remainder (if any) is the new top.
    t.size[b] = pad;
    if (fromTop) {
      this.top = NIL;
      this.index.insert(b);
    } else {
      this.index.update(b);
    }
    const live = t.insertAfter(b, at, need, LIVE);
    if (rest > 0) {
      const r = t.insertAfter(live, at + need, rest, FREE);
      if (fromTop) this.top = r;
      else this.index.insert(r);
      this.freeBlocks++;
    }
    this.placed(live, at, need, requested, align);
    return at;
  }

  /** Records live block `live` of `need` bytes at `at`: its request, the live map, the figures. */
  protected placed(live: number, at: number, need: number, requested: number, align: number): void {
    const t = this.table;
    t.requested[live] = requested;
    t.alignment[live] = align;
    if (this.pendingKey >= 0) this.live.set(this.pendingKey, this.pendingSlot);
    this.pendingKey = (at - this.base) * this.inverseGranule;
    this.pendingSlot = live;
    this.allocatedBytes += need;
    this.generationCount++;
  }

  /** Slot of the live block that starts at `address`, or {@link NIL}. */
  protected slotOf(address: number): number {
    if (typeof address !== 'number') return NIL;
    const key = this.keyOf(address);
    return key === this.pendingKey ? this.pendingSlot : this.live.get(key);
  }

  /**
   * Key of `address` in the live map: its granule index from `base`, an integer for every block
   * start (a fraction, negative or NaN for anything else, which no entry matches).
   */
  protected keyOf(address: number): number {
    return (address - this.base) * this.inverseGranule;
  }

  protected invalidFree(address: number): InvalidFreeError {
    let reason: InvalidFreeReason = 'not-live';
    if (typeof address !== 'number' || !(address >= this.base && address < this.end)) {
      reason = 'foreign-address';
    } else {
      const t = this.table;
      const b = t.containing(address);
      if (b !== NIL && t.state[b] === LIVE) reason = 'interior-pointer';
      else if (this.recent.includes(address) || (b !== NIL && t.address[b] === address)) {
        reason = 'double-free';
      }
    }
    return new InvalidFreeError(address, reason);
  }
}
