/**
 * Best fit, good fit and worst fit over one range.
 *
 * - **best** (exact): free blocks of up to 8,191 granules sit in exact-size bins
 *   (min-heaps by address, with a bitmap of non-empty bins; see `exact-bins.ts`), larger ones in an
 *   {@link OrderedTree} (a B+tree) keyed by (size, address). The first non-empty bin at or above
 *   the request, else the tree's lower bound, is the smallest block that fits, lowest address among
 *   equals. With a larger alignment, blocks too small once padded are stepped over in size order.
 * - **good** (TLSF): free blocks sit in {@link SegregatedLists}. The request is rounded up to the
 *   next class boundary, so the head of the first non-empty class at or above it fits: O(1),
 *   wasting at most one class width (1/32 of the size). A block that shrinks by a split may stay
 *   filed one class above its size until a search finds it short and refiles it, so the common
 *   split-then-merge of a large free block costs no list moves. When that finds nothing, the few
 *   classes between the request and the rounded class are searched block by block, so a request
 *   fails only when no free block can hold it.
 * - **worst**: the same (size, address) index, taking the largest block (lowest address among
 *   equals), so the classic trade-off can be measured rather than recited.
 * - The free block at the end of the range (the top) is kept out of every index by
 *   {@link FitAllocator}; each mode weighs it against its own pick by its rule (`smallerOf` for
 *   best and good, strictly larger for worst; the top loses ties, having the highest address).
 *
 * ```
 *  best / worst: (size, address) B+tree               good: segregated lists
 *  leaf [ (24, 0x900) | (64, 0x040) | (512, 0x200) ]   class 24          ─► 0x900
 *        keys in order, leaves chained both ways       class [64, 66)    ─► 0x040
 *                                                      class [512, 528)  ─► 0x200
 *  best(40) → lower bound (40, -∞) → (64, 0x040);  worst → the maximum;  good(40) → 0x040
 * ```
 *
 * Splitting, alignment padding, coalescing, accounting and compaction come from
 * {@link FitAllocator}, shared with first fit.
 */
import {
  type BlockTable,
  blockFits,
  type CompactionMove,
  type CompactionPlan,
  type CompactOptions,
  classMinimum,
  FitAllocator,
  type FitOptions,
  type FreeIndex,
  fitsIn,
  NIL,
  OrderedTree,
  SegregatedLists,
  sizeClass,
  smallerOf,
} from '@allot/blocks';
import { InvalidArgumentError } from '@allot/core';
import { BinnedSizeIndex } from './exact-bins';

export type { CompactionMove, CompactionPlan, CompactOptions };

/** Which block a request goes to. */
export type FitMode = 'best' | 'good' | 'worst';

export interface BestFitOptions extends FitOptions {
  /**
   * `best`: the smallest free block that fits, lowest address among equals (O(log n)).
   * `good`: TLSF-style segregated lists, O(1), at most 1/32 of a size class of extra waste.
   * `worst`: the largest free block (O(log n)).
   * @defaultValue 'best'
   */
  readonly mode?: FitMode;
}

/** A best-fit (or good-fit, or worst-fit) allocator: the core contract plus layout and compaction. */
export type BestFitAllocator = FitAllocator;

const NEGATIVE_INFINITY = Number.NEGATIVE_INFINITY;

/** Free blocks keyed by (size, address): exact best fit. */
class SizeOrderedIndex implements FreeIndex {
  // Assigned in the constructor only (no `undefined` first): V8 keeps the fields' shapes exact.
  declare protected readonly tree: OrderedTree;
  declare protected readonly table: BlockTable;

  constructor(table: BlockTable) {
    this.tree = new OrderedTree();
    this.table = table;
  }

  insert(block: number): void {
    const size = this.table.size[block]!;
    this.tree.insert(block, size, this.table.address[block]!, size);
  }

  remove(block: number): void {
    this.tree.remove(block);
  }

  update(block: number): void {
    const size = this.table.size[block]!;
    this.tree.rekey(block, size, this.table.address[block]!, size);
  }

  find(size: number, alignment: number, top: number): number {
    const tree = this.tree;
    let b = tree.lowerBound(size, NEGATIVE_INFINITY);
    if (alignment !== 1) {
      while (b !== NIL && !blockFits(this.table, b, size, alignment)) b = tree.successor(b);
    }
    return smallerOf(this.table, b, top, size, alignment);
  }

  largest(): number {
    return this.tree.maxValue();
  }

  clear(): void {
    this.tree.clear();
  }
}

/** The same index, taking the largest block that fits, lowest address among equals. */
class WorstFitIndex extends SizeOrderedIndex {
  override find(size: number, alignment: number, top: number): number {
    const b = this.findFiled(size, alignment);
    // The top wins when it is strictly larger (it has the highest address, so it loses ties).
    if (!fitsIn(this.table, top, size, alignment)) return b;
    return b === NIL || this.table.size[top]! > this.table.size[b]! ? top : b;
  }

  private findFiled(size: number, alignment: number): number {
    const tree = this.tree;
    // Sizes from the largest down; within one size, addresses upward.
    let end = tree.last();
    while (end !== NIL && tree.primary(end) >= size) {
      const groupSize = tree.primary(end);
      const start = tree.lowerBound(groupSize, NEGATIVE_INFINITY);
      if (alignment === 1) return start;
      for (let b = start; b !== NIL && tree.primary(b) === groupSize; b = tree.successor(b)) {
        if (blockFits(this.table, b, size, alignment)) return b;
      }
      end = tree.predecessor(start);
    }
    return NIL;
  }
}

/**
 * TLSF-style segregated lists: good fit in O(1). Blocks are filed by their size in granules, so
 * every class computation is integer arithmetic on a small count (see {@link SegregatedLists}).
 */
class SegregatedIndex implements FreeIndex {
  declare private readonly lists: SegregatedLists;
  declare private readonly table: BlockTable;
  declare private readonly inverseGranule: number;

  constructor(table: BlockTable, granule: number) {
    this.lists = new SegregatedLists();
    this.table = table;
    // Multiplying by 1/granule is exact (a power of two) and cheaper than dividing.
    this.inverseGranule = 1 / granule;
  }

  insert(block: number): void {
    this.lists.insert(block, this.table.size[block]! * this.inverseGranule);
  }

  remove(block: number): void {
    this.lists.remove(block);
  }

  update(block: number): void {
    // One class of slack: a block split just below a class boundary stays put until it is found
    // short (below), so a split undone by the next free moves nothing.
    this.lists.settle(block, this.table.size[block]! * this.inverseGranule);
  }

  find(size: number, alignment: number, top: number): number {
    const lists = this.lists;
    // Nothing filed (only the top is free, as while a heap grows): no class to look at.
    if (lists.count === 0) return fitsIn(this.table, top, size, alignment) ? top : NIL;
    // The common case written out: no padding to look for, and the head of the first class that
    // holds the request holds it (it is not one filed a class high), weighed against the top as
    // `smallerOf` weighs them.
    if (alignment === 1) {
      const c = lists.firstClassHolding(size * this.inverseGranule);
      if (c !== NIL) {
        const sizes = this.table.size;
        const b = lists.head(c);
        const held = sizes[b]!;
        if (held >= size) return top !== NIL && sizes[top]! < held && sizes[top]! >= size ? top : b;
      }
    }
    return smallerOf(this.table, this.findFiled(size, alignment), top, size, alignment);
  }

  private findFiled(size: number, alignment: number): number {
    const lists = this.lists;
    // Worst-case padding included: any block of the class found holds the request.
    const units =
      alignment === 1
        ? size * this.inverseGranule
        : Math.ceil((size + alignment - 1) * this.inverseGranule);
    for (;;) {
      const c = lists.firstClassHolding(units);
      if (c === NIL) break;
      const b = lists.head(c);
      const held = this.table.size[b]! * this.inverseGranule;
      if (held >= units) return b;
      // Filed one class above its size (see update): file it by its size and look again. Each
      // block is moved at most once per shrink, so the loop is O(1) amortised.
      lists.refile(b, held);
    }
    return this.search(size, alignment);
  }

  largest(): number {
    const lists = this.lists;
    const c = lists.lastClass();
    if (c === NIL) return 0;
    // Blocks filed one class high hold less than their class: when every block of the last class
    // is such a block, the largest may be in the class below.
    const largest = this.largestIn(c);
    if (c === 0 || largest * this.inverseGranule >= classMinimum(c)) return largest;
    return Math.max(largest, this.largestIn(c - 1));
  }

  /** Largest block filed in class `c`, in bytes (0 when none). */
  private largestIn(c: number): number {
    const lists = this.lists;
    let largest = 0;
    for (let b = lists.head(c); b !== NIL; b = lists.next(b)) {
      const size = this.table.size[b]!;
      if (size > largest) largest = size;
    }
    return largest;
  }

  clear(): void {
    this.lists.clear();
  }

  /** Block-by-block search of the classes the rounded search skipped (near exhaustion only). */
  private search(size: number, alignment: number): number {
    const lists = this.lists;
    for (
      let c = lists.firstClassFrom(sizeClass(size * this.inverseGranule));
      c !== NIL;
      c = lists.firstClassFrom(c + 1)
    ) {
      for (let b = lists.head(c); b !== NIL; b = lists.next(b)) {
        if (blockFits(this.table, b, size, alignment)) return b;
      }
    }
    return NIL;
  }
}

/**
 * Makes a best-fit allocator over `[base, base + capacity)`: exact best fit by default, good fit
 * (TLSF, O(1)) or worst fit by `mode`. Bookkeeping lives outside the range.
 *
 * @throws InvalidArgumentError when `capacity` is not a positive safe integer, `base` not a
 * non-negative safe integer, `base + capacity` above 2^53, `alignment` not a power of two, or
 * `mode` unknown.
 */
export function bestFit(options: BestFitOptions): BestFitAllocator {
  const mode = options?.mode ?? 'best';
  switch (mode) {
    case 'best':
      return new FitAllocator(options, (table, granule) => new BinnedSizeIndex(table, granule));
    case 'good':
      return new FitAllocator(options, (table, granule) => new SegregatedIndex(table, granule));
    case 'worst':
      return new FitAllocator(options, (table) => new WorstFitIndex(table));
    default:
      throw new InvalidArgumentError('mode', mode, "'best', 'good' or 'worst'");
  }
}

/** Good fit: {@link bestFit} with `mode: 'good'` (TLSF-style segregated lists, O(1)). */
export function goodFit(options: Omit<BestFitOptions, 'mode'>): BestFitAllocator {
  return bestFit({ ...options, mode: 'good' });
}

/** Worst fit: {@link bestFit} with `mode: 'worst'` (the largest free block). */
export function worstFit(options: Omit<BestFitOptions, 'mode'>): BestFitAllocator {
  return bestFit({ ...options, mode: 'worst' });
}
