/**
 * Exact-size bins in front of the (size, address) B+tree: the free index of best fit.
 *
 * A free block of at most {@link BIN_LIMIT} granules goes to the bin of its exact size; larger ones
 * go to an {@link OrderedTree} keyed by (size, address) as before. Each bin is a binary min-heap of
 * its blocks keyed by address, and a bitmap marks the non-empty bins, so best fit's rule holds
 * without a tree search for most requests: the first non-empty bin at or above the request holds
 * the smallest blocks that fit, and the top of its heap is the lowest address among them. Only a
 * request that no bin can serve descends the tree.
 *
 * The bitmap ({@link BinBitmap}) has three levels, so the first non-empty bin at or above any bin
 * is a handful of `Math.clz32`, however sparse the bins. Bins reach 64 KiB at the default 8-byte
 * granule: on a random mix of 16 B–64 KiB, 98 % of the free blocks that a 4 KiB limit sent to the
 * tree stay in bins, where filing one is a heap push and a bit, not a B+tree insert that shifts
 * its leaf.
 *
 * ```
 *  bitmap  …0 1 0 0 1 1 0…          bin 6 (48 B): heap by address   [0x0900, 0x4400, 0x1200]
 *                  ▲ first non-empty bin ≥ request             top ─┘
 *  larger blocks: (size, address) B+tree, lower bound as before
 * ```
 *
 * The heaps share one pool of typed arrays ({@link BinHeaps}), so reaching a bin's top is two reads
 * from flat arrays, with no object per bin. Heap operations are O(log m) in the blocks of one size
 * (O(1) amortised more when a bin outgrows its segment), with no shifting of sorted arrays. Sizes
 * are counted in granules (small integers), so the bit tricks touch bin numbers, never bytes.
 */
import {
  type BlockTable,
  blockFits,
  type FreeIndex,
  fitsIn,
  NIL,
  OrderedTree,
  smallerOf,
} from '@allot/blocks';
import { BIN_COUNT } from './bin-bitmap';
import { BinHeaps } from './bin-heaps';

/** Largest block size, in granules, kept in a bin (64 KiB at the default 8-byte granule). */
export const BIN_LIMIT = BIN_COUNT - 1;
const NEGATIVE_INFINITY = Number.NEGATIVE_INFINITY;

export class BinnedSizeIndex implements FreeIndex {
  declare private readonly table: BlockTable;
  declare private readonly tree: OrderedTree;
  declare private readonly inverseGranule: number;
  /** The bins: a heap of block ids by address per size in granules, and which are non-empty. */
  declare private readonly heaps: BinHeaps;
  /** Blocks of at most this many granules go to bins; {@link BIN_LIMIT} but in tests. */
  declare private readonly binLimit: number;
  /**
   * Whether a block whose size is not a whole number of granules was ever filed (only with a base
   * that is not a multiple of the granule): such blocks go to the tree, which `find` then consults
   * beside the bins.
   */
  declare private uneven: boolean;

  /**
   * @param binLimit - largest block, in granules, kept in a bin (at most {@link BIN_LIMIT}); tests
   * lower it so that small ranges exercise the tree too. @defaultValue BIN_LIMIT
   */
  constructor(table: BlockTable, granule: number, binLimit: number = BIN_LIMIT) {
    this.table = table;
    this.tree = new OrderedTree();
    this.inverseGranule = 1 / granule;
    this.heaps = new BinHeaps(BIN_COUNT);
    this.binLimit = Math.min(binLimit, BIN_LIMIT);
    this.uneven = false;
  }

  insert(block: number): void {
    const size = this.table.size[block]!;
    const units = size * this.inverseGranule;
    if (this.binned(units)) this.heaps.push(units, block, this.table.address[block]!);
    else this.tree.insert(block, size, this.table.address[block]!, size);
  }

  /** Whether a block of `units` granules goes to a bin. */
  private binned(units: number): boolean {
    if (units > this.binLimit) return false;
    if (units === Math.floor(units)) return true;
    this.uneven = true;
    return false;
  }

  remove(block: number): void {
    const bin = this.heaps.binOfId(block);
    if (bin !== NIL) this.heaps.pull(block, bin);
    else this.tree.remove(block);
  }

  update(block: number): void {
    const heaps = this.heaps;
    const bin = heaps.binOfId(block);
    const size = this.table.size[block]!;
    const units = size * this.inverseGranule;
    const binned = this.binned(units);
    if (bin === NIL) {
      if (!binned) {
        this.tree.rekey(block, size, this.table.address[block]!, size);
        return;
      }
      this.tree.remove(block);
    } else {
      heaps.pull(block, bin);
      if (!binned) {
        this.tree.insert(block, size, this.table.address[block]!, size);
        return;
      }
    }
    heaps.push(units, block, this.table.address[block]!);
  }

  find(size: number, alignment: number, top: number): number {
    // Nothing filed (only the top is free, as while a heap grows): no bin or tree to look at.
    if (this.heaps.nonEmpty.empty && this.tree.count === 0) {
      return fitsIn(this.table, top, size, alignment) ? top : NIL;
    }
    return smallerOf(this.table, this.findFiled(size, alignment), top, size, alignment);
  }

  /** Smallest filed block that holds `size` at `alignment`, lowest address among equals. */
  private findFiled(size: number, alignment: number): number {
    const units = size * this.inverseGranule;
    if (units <= this.binLimit) {
      const heaps = this.heaps;
      const bins = heaps.nonEmpty;
      for (let s = bins.next(Math.ceil(units)); s !== NIL; s = bins.next(s + 1)) {
        const b = alignment === 1 ? heaps.top(s) : this.lowestFitting(s, size, alignment);
        if (b !== NIL) return this.uneven ? this.better(b, this.findInTree(size, alignment)) : b;
      }
    }
    return this.findInTree(size, alignment);
  }

  /** Smallest block of the tree that holds `size` at `alignment`, lowest address among equals. */
  private findInTree(size: number, alignment: number): number {
    const tree = this.tree;
    let b = tree.lowerBound(size, NEGATIVE_INFINITY);
    if (alignment === 1) return b;
    while (b !== NIL && !blockFits(this.table, b, size, alignment)) b = tree.successor(b);
    return b;
  }

  /** Of two candidates (either may be NIL), the smaller block, the lower address among equals. */
  private better(a: number, b: number): number {
    if (b === NIL) return a;
    const sizes = this.table.size;
    if (sizes[b]! < sizes[a]!) return b;
    if (sizes[b]! === sizes[a]! && this.table.address[b]! < this.table.address[a]!) return b;
    return a;
  }

  largest(): number {
    const largest = this.tree.count > 0 ? this.tree.maxValue() : 0;
    const bin = this.heaps.nonEmpty.highest();
    return bin === NIL ? largest : Math.max(largest, bin / this.inverseGranule);
  }

  clear(): void {
    this.tree.clear();
    this.heaps.clear();
    this.uneven = false;
  }

  /** Lowest-address block of bin `bin` that holds `size` once aligned to `alignment`, or NIL. */
  private lowestFitting(bin: number, size: number, alignment: number): number {
    const heaps = this.heaps;
    let best = NIL;
    let bestAddress = Number.POSITIVE_INFINITY;
    for (let i = 0; i < heaps.size(bin); i++) {
      const b = heaps.idAt(bin, i);
      const address = heaps.keyAt(bin, i);
      if (address < bestAddress && blockFits(this.table, b, size, alignment)) {
        best = b;
        bestAddress = address;
      }
    }
    return best;
  }
}
