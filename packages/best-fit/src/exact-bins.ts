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
 * Heap operations are O(log m) in the blocks of one size, with no shifting of sorted arrays. A
 * bin's heap is made when its first block arrives (most of the 8,192 never hold one). Sizes are
 * counted in granules (small integers), so the bit tricks touch bin numbers, never bytes.
 */
import {
  type BlockTable,
  blockFits,
  type FreeIndex,
  fitsIn,
  growInt,
  NIL,
  OrderedTree,
  smallerOf,
} from '@allot/blocks';
import { BIN_COUNT, BinBitmap } from './bin-bitmap';

/** Largest block size, in granules, kept in a bin (64 KiB at the default 8-byte granule). */
export const BIN_LIMIT = BIN_COUNT - 1;
/** Entries a bin's heap starts with; it doubles from there. */
const INITIAL_HEAP = 4;
const NEGATIVE_INFINITY = Number.NEGATIVE_INFINITY;

/** One bin: a min-heap of block ids keyed by address (the address is copied beside the id). */
class BinHeap {
  declare keys: Float64Array;
  declare ids: Int32Array;
  declare count: number;

  constructor(capacity: number) {
    this.keys = new Float64Array(capacity);
    this.ids = new Int32Array(capacity);
    this.count = 0;
  }
}

/** Stands for every bin that never held a block; replaced by a heap of its own on first use. */
const NO_HEAP = new BinHeap(0);

export class BinnedSizeIndex implements FreeIndex {
  declare private readonly table: BlockTable;
  declare private readonly tree: OrderedTree;
  declare private readonly inverseGranule: number;
  declare private readonly bins: BinHeap[];
  /** The non-empty bins. */
  declare private readonly nonEmpty: BinBitmap;
  /** Blocks of at most this many granules go to bins; {@link BIN_LIMIT} but in tests. */
  declare private readonly binLimit: number;
  /** Per block: its bin, or {@link NIL} when it is in the tree or not filed. */
  declare private binOf: Int32Array;
  /** Per block in a bin: its place in the bin's heap. */
  declare private heapAt: Int32Array;
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
    this.bins = [];
    for (let s = 0; s <= BIN_LIMIT; s++) this.bins.push(NO_HEAP);
    this.nonEmpty = new BinBitmap();
    this.binLimit = Math.min(binLimit, BIN_LIMIT);
    this.binOf = new Int32Array(64).fill(NIL);
    this.heapAt = new Int32Array(64);
    this.uneven = false;
  }

  insert(block: number): void {
    const size = this.table.size[block]!;
    const units = size * this.inverseGranule;
    if (this.binned(units)) this.push(block, units);
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
    const bin = block < this.binOf.length ? this.binOf[block]! : NIL;
    if (bin !== NIL) this.pull(block, bin);
    else this.tree.remove(block);
  }

  update(block: number): void {
    const bin = block < this.binOf.length ? this.binOf[block]! : NIL;
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
      this.pull(block, bin);
      if (!binned) {
        this.tree.insert(block, size, this.table.address[block]!, size);
        return;
      }
    }
    this.push(block, units);
  }

  find(size: number, alignment: number, top: number): number {
    // Nothing filed (only the top is free, as while a heap grows): no bin or tree to look at.
    if (this.nonEmpty.empty && this.tree.count === 0) {
      return fitsIn(this.table, top, size, alignment) ? top : NIL;
    }
    return smallerOf(this.table, this.findFiled(size, alignment), top, size, alignment);
  }

  /** Smallest filed block that holds `size` at `alignment`, lowest address among equals. */
  private findFiled(size: number, alignment: number): number {
    const units = size * this.inverseGranule;
    if (units <= this.binLimit) {
      const bins = this.nonEmpty;
      for (let s = bins.next(Math.ceil(units)); s !== NIL; s = bins.next(s + 1)) {
        const heap = this.bins[s]!;
        const b = alignment === 1 ? heap.ids[0]! : this.lowestFitting(heap, size, alignment);
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
    const bin = this.nonEmpty.highest();
    return bin === NIL ? largest : Math.max(largest, bin / this.inverseGranule);
  }

  clear(): void {
    this.tree.clear();
    const bins = this.nonEmpty;
    for (let s = bins.next(0); s !== NIL; s = bins.next(s + 1)) this.bins[s]!.count = 0;
    bins.clear();
    this.binOf.fill(NIL);
    this.uneven = false;
  }

  /** Lowest-address block of `heap` that holds `size` once aligned to `alignment`, or NIL. */
  private lowestFitting(heap: BinHeap, size: number, alignment: number): number {
    let best = NIL;
    let bestAddress = Number.POSITIVE_INFINITY;
    for (let i = 0; i < heap.count; i++) {
      const b = heap.ids[i]!;
      const address = heap.keys[i]!;
      if (address < bestAddress && blockFits(this.table, b, size, alignment)) {
        best = b;
        bestAddress = address;
      }
    }
    return best;
  }

  /** Files `block` in bin `bin` (its size in granules). */
  private push(block: number, bin: number): void {
    if (block >= this.binOf.length) this.growIds(block + 1);
    let heap = this.bins[bin]!;
    if (heap === NO_HEAP) {
      heap = new BinHeap(INITIAL_HEAP);
      this.bins[bin] = heap;
    } else if (heap.count === heap.ids.length) {
      this.growHeap(heap);
    }
    if (heap.count === 0) this.nonEmpty.mark(bin);
    this.binOf[block] = bin;
    this.siftUp(heap, heap.count++, this.table.address[block]!, block);
  }

  /** Takes `block` out of bin `bin`. */
  private pull(block: number, bin: number): void {
    const heap = this.bins[bin]!;
    const at = this.heapAt[block]!;
    this.binOf[block] = NIL;
    const last = --heap.count;
    if (last === 0) {
      this.nonEmpty.unmark(bin);
      return;
    }
    if (at === last) return;
    // Move the last entry into the hole, then restore the heap order from there.
    const key = heap.keys[last]!;
    const id = heap.ids[last]!;
    if (at > 0 && key < heap.keys[(at - 1) >> 1]!) this.siftUp(heap, at, key, id);
    else this.siftDown(heap, at, key, id);
  }

  /** Puts (`key`, `id`) at hole `start` or above it, moving larger parents down. */
  private siftUp(heap: BinHeap, start: number, key: number, id: number): void {
    const keys = heap.keys;
    const ids = heap.ids;
    const heapAt = this.heapAt;
    let at = start;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      const parentKey = keys[parent]!;
      if (parentKey <= key) break;
      keys[at] = parentKey;
      const parentId = ids[parent]!;
      ids[at] = parentId;
      heapAt[parentId] = at;
      at = parent;
    }
    keys[at] = key;
    ids[at] = id;
    heapAt[id] = at;
  }

  /** Puts (`key`, `id`) at hole `start` or below it, moving smaller children up. */
  private siftDown(heap: BinHeap, start: number, key: number, id: number): void {
    const keys = heap.keys;
    const ids = heap.ids;
    const heapAt = this.heapAt;
    const count = heap.count;
    let at = start;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= count) break;
      if (child + 1 < count && keys[child + 1]! < keys[child]!) child++;
      const childKey = keys[child]!;
      if (childKey >= key) break;
      keys[at] = childKey;
      const childId = ids[child]!;
      ids[at] = childId;
      heapAt[childId] = at;
      at = child;
    }
    keys[at] = key;
    ids[at] = id;
    heapAt[id] = at;
  }

  private growHeap(heap: BinHeap): void {
    const n = heap.ids.length * 2;
    const keys = new Float64Array(n);
    keys.set(heap.keys);
    heap.keys = keys;
    heap.ids = growInt(heap.ids, n);
  }

  private growIds(atLeast: number): void {
    let n = this.binOf.length * 2;
    while (n < atLeast) n *= 2;
    const binOf = new Int32Array(n).fill(NIL);
    binOf.set(this.binOf);
    this.binOf = binOf;
    this.heapAt = growInt(this.heapAt, n);
  }
}
