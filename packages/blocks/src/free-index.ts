/**
 * The one thing a fit strategy decides: which free block a request goes to. {@link FitAllocator}
 * keeps the block table, splitting, coalescing, accounting and compaction; a strategy hands it a
 * `FreeIndex` that files free blocks and picks one.
 */
import { type BlockTable, NIL } from './block-table';

export interface FreeIndex {
  /** Files free block `block` (its address and size are in the table). */
  insert(block: number): void;
  /** Unfiles free block `block`. */
  remove(block: number): void;
  /**
   * The address and/or size of filed block `block` changed; its address order among the free
   * blocks did not (it shrank from either end, or grew over a neighbouring live block's range).
   */
  update(block: number): void;
  /**
   * A block that holds `size` bytes at an address aligned to `alignment` (after padding), or `NIL`
   * (-1) when the strategy finds none. `size` is already rounded to the granule; an `alignment` of
   * 1 means every block's address is aligned already (no padding to check).
   *
   * `top` is the free block at the end of the range, which the allocator keeps out of the index, or
   * `NIL`: the index returns it when its rule would pick it over every filed block (it has the
   * highest address of all). {@link fitsIn} says whether it holds the request.
   */
  find(size: number, alignment: number, top: number): number;
  /** Size of the largest filed block, in bytes (0 when none). */
  largest(): number;
  /** Unfiles everything. */
  clear(): void;
}

/**
 * Makes a strategy's index over the allocator's block table. `granule` is the allocator's minimum
 * alignment: every block size is a multiple of it, so an index may count sizes in granules (small
 * integers, fit for bit tricks) instead of bytes.
 */
export type FreeIndexFactory = (table: BlockTable, granule: number) => FreeIndex;

/** Bytes to skip from `address` to reach a multiple of `alignment` (a power of two). Exact to 2^53. */
export function paddingFor(address: number, alignment: number): number {
  const remainder = address - Math.floor(address / alignment) * alignment;
  return remainder === 0 ? 0 : alignment - remainder;
}

/**
 * Whether `block` (a block of `table`, or `NIL`: false) holds `size` bytes at `alignment` (1: no
 * padding to check).
 */
export function fitsIn(table: BlockTable, block: number, size: number, alignment: number): boolean {
  if (block === NIL) return false;
  return alignment === 1 ? size <= table.size[block]! : blockFits(table, block, size, alignment);
}

/**
 * Best fit's choice between a filed block `filed` (or NIL) and the top (or NIL): the smaller that
 * holds the request, `filed` on a tie (the top has the highest address of all).
 */
export function smallerOf(
  table: BlockTable,
  filed: number,
  top: number,
  size: number,
  alignment: number,
): number {
  if (!fitsIn(table, top, size, alignment)) return filed;
  return filed === NIL || table.size[top]! < table.size[filed]! ? top : filed;
}

/** Whether block `block` of `table` holds `size` bytes once its address is aligned to `alignment`. */
export function blockFits(
  table: BlockTable,
  block: number,
  size: number,
  alignment: number,
): boolean {
  return paddingFor(table.address[block]!, alignment) + size <= table.size[block]!;
}
