/**
 * Many small min-heaps (one per bin) in one pool of typed arrays: the bins of best fit.
 *
 * Each bin's heap is a segment of the pool's two arrays (keys, ids), found by the bin's `start`;
 * a block's bin and its place in that heap are kept per block id. So the top of a bin is two
 * reads from flat arrays (`start`, then `ids`), with no object per bin to reach first and none for
 * the collector to trace: on a random mix the bins touched change on every call.
 *
 * ```
 *  start  [ … 0 | 12 | … ]   count [ … 3 | 1 | … ]   room [ … 4 | 4 | … ]
 *  keys   [ 0x040 0x900 0x4400 ·  | … | 0x0200 · · · | … ]      ids alongside
 *           └ bin 6's heap (3 of 4)     └ bin 7's heap (1 of 4)
 * ```
 *
 * A full segment moves to the end of the pool with twice the room, leaving a hole; a segment is
 * never taken back (as an array that grows is not shrunk), so a bin that empties and fills again
 * moves nothing. When the pool is full, the segments are copied into a new pool twice what they
 * take, without the holes: every move and copy is paid for by the pushes that filled segments
 * since the last, so a push is O(1) amortised plus its sift, and the pool stays within about twice
 * the room of its segments.
 *
 * Heap operations are O(log m) in the blocks of one bin. Taking a block out moves the hole down
 * along the smaller children to a leaf, then raises the last entry from there: one comparison a
 * level, none of them against the moved key, which mostly belongs near the bottom.
 */
import { growInt, NIL } from '@allot/blocks';
import { BinBitmap } from './bin-bitmap';

/** Room a bin's heap gets when its first block arrives; it doubles from there. */
const INITIAL_ROOM = 4;
/** Entries of the pool at first. */
const INITIAL_POOL = 1024;

/** Room a full heap of `n` entries moves to. */
function roomFor(n: number): number {
  return Math.max(INITIAL_ROOM, 2 * n);
}

export class BinHeaps {
  /** The non-empty bins. */
  declare readonly nonEmpty: BinBitmap;
  /** Pool: per entry, its key (an address); a heap's entries are a segment of it. */
  declare private keys: Float64Array;
  /** Pool: per entry, its id (a block). */
  declare private ids: Int32Array;
  /** Per bin: where its segment of the pool starts. */
  declare private readonly start: Int32Array;
  /** Per bin: the entries its segment has room for (0: none yet). */
  declare private readonly room: Int32Array;
  /** Per bin: the entries in its heap. */
  declare private readonly count: Int32Array;
  /** The bins that have a segment, the first {@link segmentCount} entries, in no order. */
  declare private readonly segments: Int32Array;
  declare private segmentCount: number;
  /** Entries of the pool handed to segments so far (the rest is free). */
  declare private used: number;
  /** Per id: its bin, or {@link NIL} when it is in none. */
  declare private binOf: Int32Array;
  /** Per id in a bin: its place in the bin's heap. */
  declare private heapAt: Int32Array;

  /** @param bins - number of bins, at most the {@link BinBitmap}'s. */
  constructor(bins: number) {
    this.nonEmpty = new BinBitmap();
    this.keys = new Float64Array(INITIAL_POOL);
    this.ids = new Int32Array(INITIAL_POOL);
    this.start = new Int32Array(bins);
    this.room = new Int32Array(bins);
    this.count = new Int32Array(bins);
    this.segments = new Int32Array(bins);
    this.segmentCount = 0;
    this.used = 0;
    this.binOf = new Int32Array(64).fill(NIL);
    this.heapAt = new Int32Array(64);
  }

  /** The bin of `id`, or {@link NIL} when it is in none. */
  binOfId(id: number): number {
    return id < this.binOf.length ? this.binOf[id]! : NIL;
  }

  /** The id of lowest key in bin `bin`, which must be non-empty. */
  top(bin: number): number {
    return this.ids[this.start[bin]!]!;
  }

  /** Entries in bin `bin`. */
  size(bin: number): number {
    return this.count[bin]!;
  }

  /** The id of entry `i` (in `[0, size(bin))`, in heap order) of bin `bin`. */
  idAt(bin: number, i: number): number {
    return this.ids[this.start[bin]! + i]!;
  }

  /** The key of entry `i` of bin `bin`. */
  keyAt(bin: number, i: number): number {
    return this.keys[this.start[bin]! + i]!;
  }

  /** Files `id` (a non-negative integer in no bin) in bin `bin` with key `key`. */
  push(bin: number, id: number, key: number): void {
    if (id >= this.binOf.length) this.growIds(id + 1);
    const n = this.count[bin]!;
    if (n === this.room[bin]!) this.makeRoom(bin);
    else if (n === 0) this.nonEmpty.mark(bin);
    this.count[bin] = n + 1;
    this.binOf[id] = bin;
    this.siftUp(this.start[bin]!, n, key, id);
  }

  /** Takes `id` out of bin `bin` (the bin it is in). */
  pull(id: number, bin: number): void {
    const at = this.heapAt[id]!;
    this.binOf[id] = NIL;
    const last = this.count[bin]! - 1;
    this.count[bin] = last;
    if (last === 0) {
      this.nonEmpty.unmark(bin);
      return;
    }
    if (at === last) return;
    const base = this.start[bin]!;
    const keys = this.keys;
    const ids = this.ids;
    const heapAt = this.heapAt;
    let hole = at;
    for (;;) {
      let child = 2 * hole + 1;
      if (child >= last) break;
      if (child + 1 < last && keys[base + child + 1]! < keys[base + child]!) child++;
      keys[base + hole] = keys[base + child]!;
      const childId = ids[base + child]!;
      ids[base + hole] = childId;
      heapAt[childId] = hole;
      hole = child;
    }
    this.siftUp(base, hole, keys[base + last]!, ids[base + last]!);
  }

  /** Empties every bin; the pool keeps its segments. */
  clear(): void {
    const bins = this.nonEmpty;
    for (let s = bins.next(0); s !== NIL; s = bins.next(s + 1)) this.count[s] = 0;
    bins.clear();
    this.binOf.fill(NIL);
  }

  /** Puts (`key`, `id`) at place `start` of the heap at `base` or above it. */
  private siftUp(base: number, start: number, key: number, id: number): void {
    const keys = this.keys;
    const ids = this.ids;
    const heapAt = this.heapAt;
    let at = start;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      const parentKey = keys[base + parent]!;
      if (parentKey <= key) break;
      keys[base + at] = parentKey;
      const parentId = ids[base + parent]!;
      ids[base + at] = parentId;
      heapAt[parentId] = at;
      at = parent;
    }
    keys[base + at] = key;
    ids[base + at] = id;
    heapAt[id] = at;
  }

  /**
   * Gives bin `bin`, its segment full, one with twice the room (the first's when it had none) at the
   * end of the pool, repacking the pool first when that has no room left.
   */
  private makeRoom(bin: number): void {
    const n = this.count[bin]!;
    const room = roomFor(n);
    if (n === 0) {
      this.nonEmpty.mark(bin);
      this.segments[this.segmentCount++] = bin;
    }
    if (this.used + room > this.ids.length) this.repack(room);
    const from = this.start[bin]!;
    const to = this.used;
    this.keys.copyWithin(to, from, from + n);
    this.ids.copyWithin(to, from, from + n);
    this.start[bin] = to;
    this.room[bin] = room;
    this.used = to + room;
  }

  /**
   * Copies every segment (its room, with the heap it holds) into a new pool twice what they and
   * `more` entries take, leaving out the holes that segments moved out of.
   */
  private repack(more: number): void {
    const segments = this.segments;
    const room = this.room;
    let needed = more;
    for (let i = 0; i < this.segmentCount; i++) needed += room[segments[i]!]!;
    const keys = new Float64Array(Math.max(INITIAL_POOL, 2 * needed));
    const ids = new Int32Array(keys.length);
    let to = 0;
    for (let i = 0; i < this.segmentCount; i++) {
      const s = segments[i]!;
      const from = this.start[s]!;
      const n = this.count[s]!;
      keys.set(this.keys.subarray(from, from + n), to);
      ids.set(this.ids.subarray(from, from + n), to);
      this.start[s] = to;
      to += room[s]!;
    }
    this.keys = keys;
    this.ids = ids;
    this.used = to;
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
