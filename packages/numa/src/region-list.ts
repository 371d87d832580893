/**
 * RegionList: a source's live regions in address order. `indexOf` finds the region that holds an
 * address by binary search; `insert` keeps the order. Indices are small integers, so `>>> 1` on
 * them is exact (addresses themselves never meet a bitwise operator).
 */
export class RegionList<R extends { readonly address: number; readonly size: number }> {
  private readonly items: R[] = [];

  /** Live regions. */
  get length(): number {
    return this.items.length;
  }

  /** The region at `index` (from {@link indexOf}), or undefined. */
  at(index: number): R | undefined {
    return this.items[index];
  }

  /** Index of the region holding `address`, or -1. */
  indexOf(address: number): number {
    const live = this.items;
    let lo = 0;
    let hi = live.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const r = live[mid]!;
      if (address < r.address) hi = mid - 1;
      else if (address >= r.address + r.size) lo = mid + 1;
      else return mid;
    }
    return -1;
  }

  /** Adds a region that overlaps none of the others. */
  insert(region: R): void {
    const live = this.items;
    let lo = 0;
    let hi = live.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (live[mid]!.address < region.address) lo = mid + 1;
      else hi = mid;
    }
    live.splice(lo, 0, region);
  }

  /** Forgets the region at `index`. */
  removeAt(index: number): void {
    this.items.splice(index, 1);
  }

  /** A copy, ascending by address. */
  toArray(): R[] {
    return this.items.slice();
  }
}
