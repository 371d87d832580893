/**
 * LiveTable: the requested and usable size of every live block, keyed by address.
 *
 * The lookup is the shared address table of `@allot/blocks` ({@link AddressMap}: open addressing in
 * typed arrays, keys compared as exact doubles, no bitwise operator on an address). It maps an
 * address to a record, two doubles (requested, usable) of one `Float64Array`; records of removed
 * blocks are recycled through a stack of spare indices, and both arrays double when full, so the
 * counting hot path allocates nothing once grown.
 */
import { AddressMap, growFloat, growInt } from '@allot/blocks';

/** Records a table starts with; it doubles from there. */
const INITIAL_RECORDS = 1024;

export class LiveTable {
  private readonly map: AddressMap;
  /** Record r: requested bytes at 2r, usable bytes at 2r + 1. */
  private records: Float64Array;
  /** Indices of records free for reuse: the first {@link spareCount} entries. */
  private spare: Int32Array;
  private spareCount = 0;
  /** Records ever handed out (the next fresh index). */
  private used = 0;

  /** @param initialRecords - records to reserve up front (at least 1). @defaultValue 1024 */
  constructor(initialRecords = INITIAL_RECORDS) {
    const n = Math.max(1, Math.floor(initialRecords));
    this.map = new AddressMap(2 * n);
    this.records = new Float64Array(2 * n);
    this.spare = new Int32Array(n);
  }

  /** Live entries. */
  get size(): number {
    return this.map.size;
  }

  /** Record of `address`, or -1. */
  find(address: number): number {
    return this.map.get(address);
  }

  /** Requested bytes of record `index` (from {@link find}). */
  requestedAt(index: number): number {
    return this.records[2 * index]!;
  }

  /** Usable bytes of record `index` (from {@link find}). */
  usableAt(index: number): number {
    return this.records[2 * index + 1]!;
  }

  /** Records a live block (the address must not be present). */
  insert(address: number, requested: number, usable: number): void {
    let r: number;
    if (this.spareCount > 0) r = this.spare[--this.spareCount]!;
    else {
      r = this.used++;
      if (2 * r === this.records.length) this.grow();
    }
    this.records[2 * r] = requested;
    this.records[2 * r + 1] = usable;
    this.map.set(address, r);
  }

  /**
   * Removes `address` and returns its record, which keeps its sizes until it is given to
   * {@link recycle} (the removal stands) or {@link restore} (it is undone); -1 when not live.
   */
  take(address: number): number {
    return this.map.take(address);
  }

  /** Makes record `index` (from {@link take}) reusable. */
  recycle(index: number): void {
    this.spare[this.spareCount++] = index;
  }

  /** Puts back the entry {@link take} removed. */
  restore(address: number, index: number): void {
    this.map.set(address, index);
  }

  /** Forgets every entry (keeps the arrays). */
  clear(): void {
    this.map.clear();
    this.spareCount = 0;
    this.used = 0;
  }

  /** Calls `visit` for every entry (any order). */
  forEach(visit: (address: number, requested: number, usable: number) => void): void {
    const records = this.records;
    this.map.forEach((address, r) => {
      visit(address, records[2 * r]!, records[2 * r + 1]!);
    });
  }

  private grow(): void {
    this.records = growFloat(this.records, 2 * this.records.length);
    this.spare = growInt(this.spare, 2 * this.spare.length);
  }
}
