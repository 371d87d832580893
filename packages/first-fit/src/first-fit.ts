/**
 * Address-ordered first fit and next fit over one range, with O(log n) search.
 *
 * Free blocks are filed in an {@link OrderedTree} (a B+tree in typed arrays) keyed by address
 * whose internal nodes also know the largest free size below each child. First fit descends to the
 * leftmost block whose size fits, skipping whole subtrees whose maximum is too small: O(log n) in
 * the number of free blocks, never a walk over them. With a larger alignment, a block that fits by
 * size but not once padded is skipped and the search resumes after it.
 *
 * Next fit starts the same search at the address where the previous allocation ended and wraps to
 * the start of the range when nothing fits above it.
 *
 * The free block at the end of the range (the top) is not in the tree ({@link FitAllocator} keeps it
 * out): having the highest address, it is first fit's last resort, and next fit's after the filed
 * blocks above the rover and before the wrap.
 *
 * Splitting and coalescing never change the address order of the free blocks (a block shrinks from
 * its front, or grows over a neighbour that was live), so most operations rewrite an entry's key in
 * place and only refresh the maxima above it, stopping as soon as one is unchanged.
 *
 * ```
 *  address order:   [ free 96 ][ live ][ free 24 ][ live ][ free 512 ]
 *  index:            [ (0x000) max 96 | (0x300) max 512 ]
 *                         /                        \
 *        [ free 96 | free 24 ]   ⇄   [ free 512 ]          leaves in address order
 *  allocate(64) → first child with max ≥ 64 → first leaf entry with size ≥ 64 → free 96
 * ```
 */
import {
  type BlockTable,
  blockFits,
  type CompactionMove,
  type CompactionPlan,
  type CompactOptions,
  FitAllocator,
  type FitOptions,
  type FreeIndex,
  fitsIn,
  NIL,
  OrderedTree,
  paddingFor,
} from '@allot/blocks';

export type { CompactionMove, CompactionPlan, CompactOptions };

export interface FirstFitOptions extends FitOptions {
  /**
   * Start each search where the previous allocation ended (wrapping to the start) instead of at
   * the start of the range: spreads blocks over the range, usually with more fragmentation.
   * @defaultValue false
   */
  readonly nextFit?: boolean;
}

/** A first-fit (or next-fit) allocator: the core contract plus layout and compaction. */
export type FirstFitAllocator = FitAllocator;

/** Free blocks keyed by address, with the largest size below each internal entry. */
class AddressOrderedIndex implements FreeIndex {
  // Assigned in the constructor only (no `undefined` first): V8 keeps the fields' shapes exact.
  declare protected readonly tree: OrderedTree;
  declare protected readonly table: BlockTable;

  constructor(table: BlockTable) {
    this.tree = new OrderedTree({ augmented: true });
    this.table = table;
  }

  insert(block: number): void {
    this.tree.insert(block, this.table.address[block]!, 0, this.table.size[block]!);
  }

  remove(block: number): void {
    this.tree.remove(block);
  }

  update(block: number): void {
    this.tree.updateInPlace(block, this.table.address[block]!, 0, this.table.size[block]!);
  }

  find(size: number, alignment: number, top: number): number {
    // Nothing filed (only the top is free, as while a heap grows): no tree to descend.
    if (this.tree.count === 0) return fitsIn(this.table, top, size, alignment) ? top : NIL;
    let b = this.tree.firstAtLeast(Number.NEGATIVE_INFINITY, size);
    if (alignment !== 1) b = this.aligned(b, size, alignment);
    // The top has the highest address: it is first fit's last resort.
    return b === NIL && fitsIn(this.table, top, size, alignment) ? top : b;
  }

  largest(): number {
    return this.tree.maxValue();
  }

  clear(): void {
    this.tree.clear();
  }

  /** Lowest-address block at or above `from` that holds `size` at `alignment`, or NIL. */
  protected findFrom(from: number, size: number, alignment: number): number {
    const b = this.tree.firstAtLeast(from, size);
    return alignment === 1 ? b : this.aligned(b, size, alignment);
  }

  /**
   * From block `start` on (a block at least `size` bytes, or NIL), the first in address order that
   * still holds `size` once its address is padded to `alignment`.
   */
  private aligned(start: number, size: number, alignment: number): number {
    let b = start;
    while (b !== NIL && !blockFits(this.table, b, size, alignment))
      b = this.tree.nextAtLeast(b, size);
    return b;
  }
}

/** Next fit: the search starts where the previous allocation ended. */
class NextFitIndex extends AddressOrderedIndex {
  declare private rover: number;

  constructor(table: BlockTable) {
    super(table);
    this.rover = Number.NEGATIVE_INFINITY;
  }

  override find(size: number, alignment: number, top: number): number {
    const table = this.table;
    let b: number;
    if (this.tree.count === 0) {
      // Nothing filed (only the top is free, as in a same-size loop): the top or nothing, wherever
      // the rover is, with no search on either side of it.
      b = fitsIn(table, top, size, alignment) ? top : NIL;
    } else {
      b = this.findFrom(this.rover, size, alignment);
    }
    if (b === NIL) {
      // The top comes after every filed block at or above the rover, and before the wrap; when it
      // starts below the rover, it is the wrapped search's last block instead.
      if (top !== NIL && table.address[top]! >= this.rover && fitsIn(table, top, size, alignment)) {
        b = top;
      } else {
        b = this.findFrom(Number.NEGATIVE_INFINITY, size, alignment);
        if (b === NIL && fitsIn(table, top, size, alignment)) b = top;
      }
    }
    if (b !== NIL) {
      const address = this.table.address[b]!;
      this.rover = address + (alignment === 1 ? 0 : paddingFor(address, alignment)) + size;
    }
    return b;
  }

  override clear(): void {
    super.clear();
    this.rover = Number.NEGATIVE_INFINITY;
  }
}

/**
 * Makes an address-ordered first-fit allocator over `[base, base + capacity)` (next fit with
 * `nextFit: true`). Bookkeeping lives outside the range.
 *
 * @throws InvalidArgumentError when `capacity` is not a positive safe integer, `base` not a
 * non-negative safe integer, `base + capacity` above 2^53, or `alignment` not a power of two.
 */
export function firstFit(options: FirstFitOptions): FirstFitAllocator {
  const nextFit = options?.nextFit ?? false;
  return new FitAllocator(options, (table) =>
    nextFit ? new NextFitIndex(table) : new AddressOrderedIndex(table),
  );
}
