/**
 * Exact-size bins in front of the (size, address) B+tree: the free index of best fit.
 *
 * A free block of at most {@link BIN_LIMIT} granules goes to the bin of its exact size; larger ones
 * go to an {@link OrderedTree} keyed by (size, address) as before. Each bin is a binary min-heap of
 * its blocks keyed by address, and a bitmap marks the non-empty bins, so best fit's rule holds
 * without a tree search for small requests: the first non-empty bin at or above the request (a few
 * `Math.clz32` over the bitmap) holds the smallest blocks that fit, and the top of its heap is the
 * lowest address among them. Only a request that no bin can serve descends the tree.
 *
 * ```
 *  bitmap  …0 1 0 0 1 1 0…          bin 6 (48 B): heap by address   [0x0900, 0x4400, 0x1200]
 *                  ▲ first non-empty bin ≥ request             top ─┘
 *  larger blocks: (size, address) B+tree, lower bound as before
 * ```
 *
 * Heap operations are O(log m) in the blocks of one size, with no shifting of sorted arrays: what
 * made the tree's insert and remove costly for the many small blocks of a mixed workload. Sizes are
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

/** Largest block size, in granules, kept in a bin (4 KiB at the default 8-byte granule). */
export const BIN_LIMIT = 511;
/** Bitmap words: bit `s & 31` of word `s >> 5` says bin `s` is non-empty. */
const MAP_WORDS = (BIN_LIMIT + 1) / 32;
/** Entries a bin's heap starts with; it doubles from there. */
const INITIAL_HEAP = 4;
const NEGATIVE_INFINITY = Number.NEGATIVE_INFINITY;

/** One bin: a min-heap of block ids keyed by address (the address is copied beside the id). */
class BinHeap {
  declare keys: Float64Array;
  declare ids: Int32Array;
  declare count: number;

  constructor() {
    this.keys = new Float64Array(INITIAL_HEAP);
    this.ids = new Int32Array(INITIAL_HEAP);
    this.count = 0;
  }
}

export class BinnedSizeIndex implements FreeIndex {
  declare private readonly table: BlockTable;
  declare private readonly tree: OrderedTree;
  declare private readonly inverseGranule: number;
  declare private readonly bins: BinHeap[];
  /** Non-empty bins, one bit each. */
  declare private readonly map: Int32Array;
  /** Non-empty words of {@link map}, one bit each. */
  declare private summary: number;
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

  constructor(table: BlockTable, granule: number) {
    this.table = table;
    this.tree = new OrderedTree();
    this.inverseGranule = 1 / granule;
    this.bins = [];
    for (let s = 0; s <= BIN_LIMIT; s++) this.bins.push(new BinHeap());
    this.map = new Int32Array(MAP_WORDS);
    this.summary = 0;
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
    if (units > BIN_LIMIT) return false;
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
    if (this.summary === 0 && this.tree.count === 0) {
      return fitsIn(this.table, top, size, alignment) ? top : NIL;
    }
    return smallerOf(this.table, this.findFiled(size, alignment), top, size, alignment);
  }

  /** Smallest filed block that holds `size` at `alignment`, lowest address among equals. */
  private findFiled(size: number, alignment: number): number {
    const units = size * this.inverseGranule;
    if (units <= BIN_LIMIT) {
      for (let s = this.nextBin(Math.ceil(units)); s !== NIL; s = this.nextBin(s + 1)) {
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
    let largest = this.tree.count > 0 ? this.tree.maxValue() : 0;
    for (let word = MAP_WORDS - 1; word >= 0; word--) {
      const bits = this.map[word]!;
      if (bits !== 0) {
        const size = ((word << 5) + 31 - Math.clz32(bits)) / this.inverseGranule;
        if (size > largest) largest = size;
        break;
      }
    }
    return largest;
  }

  clear(): void {
    this.tree.clear();
    for (const heap of this.bins) heap.count = 0;
    this.map.fill(0);
    this.summary = 0;
    this.binOf.fill(NIL);
    this.uneven = false;
  }

  /** First non-empty bin ≥ `from`, or {@link NIL}. */
  private nextBin(from: number): number {
    if (from > BIN_LIMIT) return NIL;
    let word = from >> 5;
    const bits = this.map[word]! & (-1 << (from & 31));
    if (bits !== 0) return (word << 5) + 31 - Math.clz32(bits & -bits);
    const above = word === 31 ? 0 : this.summary & (-1 << (word + 1));
    if (above === 0) return NIL;
    word = 31 - Math.clz32(above & -above);
    const inWord = this.map[word]!;
    return (word << 5) + 31 - Math.clz32(inWord & -inWord);
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
    const heap = this.bins[bin]!;
    if (heap.count === heap.ids.length) this.growHeap(heap);
    if (heap.count === 0) {
      const word = bin >> 5;
      this.map[word] = this.map[word]! | (1 << (bin & 31));
      this.summary |= 1 << word;
    }
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
      const word = bin >> 5;
      const bits = this.map[word]! & ~(1 << (bin & 31));
      this.map[word] = bits;
      if (bits === 0) this.summary &= ~(1 << word);
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
