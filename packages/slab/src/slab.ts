/**
 * slab: object caches per size class, as in the kernel's slab/SLUB allocators and jemalloc's small
 * size classes, over any upstream allocator.
 *
 * Design
 * - A request is rounded up to the smallest size class that holds it (a lookup table indexed by
 *   size / granule, then at most a step or two). Requests above the largest class return `null`,
 *   so `segregate` or `fallback` can send them elsewhere.
 * - A slab is one run taken from the upstream, aligned to `slabSize` (the page of the address →
 *   slab map) and cut into equal objects. An upstream that cannot align a slab that far is asked
 *   for a run `alignment − 1` bytes longer instead, and the slab is aligned inside it. Each object has one f64 word: its requested size while
 *   live, a link of the slab's free list (LIFO, an O(1) stack) while free. Objects never handed out
 *   sit behind a bump index, so a new slab costs no initialisation.
 * - Per class, slabs with a free object sit on one doubly-linked list, partial slabs ahead of empty
 *   ones, so allocation takes the head (the fullest useful slab first) and a slab that empties moves
 *   to the tail; full slabs are off the list and only counted. Allocation and free are O(1) unless
 *   a slab is taken from or given back to the upstream.
 * - An empty slab goes back upstream as soon as more than `maxEmptySlabs` empty slabs of its class
 *   are held.
 * - Free finds the slab through a page map (`floor(address / slabSize)` → slab id, the shared
 *   `AddressMap` of `@allot/blocks`), then the object by division; the object's word (> 0 only
 *   while live) catches double frees and interior pointers before anything changes.
 * - Each slab is one record, a Float64Array: a header (base, object size, free-list head, counts,
 *   list links; named offsets below) and then the object words. Allocation and free touch the
 *   record, one per-class counter and nothing else in the common case, and allocate nothing.
 * - Object addresses are aligned to the largest power of two dividing the class size (slabs are
 *   aligned to at least that much); a request that asks for more goes to the smallest larger class
 *   that guarantees it, or returns `null`.
 */
import {
  type Adaptor,
  type Allocator,
  alignUp,
  checkNonNegativeInteger,
  checkRequest,
  checkSize,
  InvalidArgumentError,
  InvalidFreeError,
  type InvalidFreeReason,
  isPowerOfTwo,
  type Layout,
  type LayoutBlock,
  type LayoutSegment,
  type Usage,
} from '@allot/core';
import {
  CLASS_ALIGNMENT,
  CLASS_EMPTY,
  CLASS_FIGURES,
  CLASS_FULL,
  CLASS_HEAD,
  CLASS_HELD,
  CLASS_INTS,
  CLASS_OBJECTS,
  CLASS_SIZE,
  CLASS_SLAB_ALIGNMENT,
  CLASS_SLAB_BYTES,
  CLASS_SLABS,
  CLASS_TAIL,
  RECORD_BASE,
  RECORD_BUMP,
  RECORD_CLASS,
  RECORD_FREE,
  RECORD_FREE_HEAD,
  RECORD_HEADER,
  RECORD_HELD,
  RECORD_ID,
  RECORD_IN_USE,
  RECORD_INVERSE,
  RECORD_NEXT,
  RECORD_OBJECTS,
  RECORD_PREV,
  RECORD_SIZE,
  RECORD_SPAN,
  RECORD_UPSTREAM,
} from './layout';
import { PageMap } from './page-map';
import { defaultSizeClasses, transformerSizeClasses } from './size-classes';

/** Fewest objects a slab holds: slabs of large classes grow (by doubling) until this many fit. */
const MIN_OBJECTS_PER_SLAB = 4;
/** Most entries of the size → class lookup table; the granule grows to stay under it. */
const MAX_LOOKUP_ENTRIES = 1 << 16;
/** Most objects per slab. */
const MAX_OBJECTS_PER_SLAB = 2 ** 31 - 1;

export interface SlabOptions<Upstream extends Allocator = Allocator> {
  /** Where slabs come from; each slab goes back to it when released. */
  readonly upstream: Upstream;
  /**
   * Object sizes in bytes, strictly ascending positive integers, or the name of a built-in table.
   * @defaultValue 'default' ({@link defaultSizeClasses})
   */
  readonly sizeClasses?: readonly number[] | 'default' | 'transformer';
  /**
   * Bytes per slab (a power of two), and the alignment slabs are taken at. A class whose objects
   * would fit fewer than 4 times gets slabs of the smallest power-of-two multiple that holds 4.
   * @defaultValue 65536 (64 KiB)
   */
  readonly slabSize?: number;
  /**
   * Empty slabs kept per class before one goes back to the upstream. 0 returns each slab as soon
   * as it empties; more avoids thrashing when usage hovers around a slab boundary.
   * @defaultValue 1
   */
  readonly maxEmptySlabs?: number;
}

/** Figures of one size class. */
export interface SlabClassStats {
  /** Object size, in bytes. */
  readonly size: number;
  /** Alignment every object of the class has, in bytes. */
  readonly alignment: number;
  /** Bytes per slab of this class (asked from the upstream). */
  readonly slabBytes: number;
  readonly objectsPerSlab: number;
  /** Objects handed out and not freed. */
  readonly liveObjects: number;
  /** Free object slots in the class's slabs. */
  readonly freeObjects: number;
  readonly fullSlabs: number;
  readonly partialSlabs: number;
  readonly emptySlabs: number;
  /** Bytes held from the upstream for this class (usable sizes of its slabs). */
  readonly heldBytes: number;
  /** Bytes callers asked for, over live objects. */
  readonly requestedBytes: number;
  /** Rounding waste: live objects × size − requested bytes. */
  readonly roundingWasteBytes: number;
  /** Slab tails that hold no object: held bytes − slabs × objects per slab × size. */
  readonly tailWasteBytes: number;
}

/** A slab allocator: size-class object caches over an upstream. */
export interface Slab<Upstream extends Allocator = Allocator> extends Adaptor<Upstream> {
  /** The size classes, in bytes, ascending. */
  readonly sizeClasses: readonly number[];
  /** Bytes per slab (and slab alignment) for the smallest classes. */
  readonly slabSize: number;
  readonly maxEmptySlabs: number;
  /** Largest request served, in bytes (the largest class). */
  readonly maxRequestSize: number;
  /** Figures per size class, in class order. O(objects held): requested bytes are summed here. */
  classStats(): SlabClassStats[];
  /** Each slab a segment (pool: the class size, for example `64 B`), each object a block. */
  layout(): Layout;
}

/** Stands for "no slab": every field is NaN, so no address passes the checks on free. */
const EMPTY_RECORD = new Float64Array(RECORD_HEADER).fill(Number.NaN);

class SlabAllocator<Upstream extends Allocator> implements Slab<Upstream> {
  // `declare`d fields are assigned in the constructor only, which keeps number fields unboxed.
  declare readonly upstream: Upstream;
  declare readonly sizeClasses: readonly number[];
  declare readonly slabSize: number;
  declare readonly maxEmptySlabs: number;
  declare readonly maxRequestSize: number;
  declare readonly alignment: number;

  declare private readonly classCount: number;
  declare private readonly classInts: Int32Array;
  declare private readonly classFigures: Float64Array;
  /** Live objects per class. */
  declare private readonly classLive: Float64Array;
  /** Record of the head of each class's list, or null: where the next object comes from. */
  declare private readonly classCurrent: (Float64Array | null)[];
  /** Size → class: entry s is the smallest class ≥ (s − 1) × granule + 1. */
  declare private readonly lookup: Uint16Array;
  declare private readonly inverseGranule: number;
  /** Address → slab: page `floor(address / slabSize)` → slab id. */
  declare private readonly pages: PageMap;
  declare private readonly inversePage: number;

  /** Slab records by id (ids are recycled; a spare id keeps its record for reuse). */
  declare private records: Float64Array[];
  declare private spareIds: number[];
  /** The slab of the last page-map lookup: [recentBase, recentEnd) → recentRecord. */
  declare private recentBase: number;
  declare private recentEnd: number;
  declare private recentRecord: Float64Array;

  constructor(options: SlabOptions<Upstream>) {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidArgumentError('options', options, 'an object with an upstream allocator');
    }
    const { upstream } = options;
    if (
      typeof upstream !== 'object' ||
      upstream === null ||
      typeof upstream.allocate !== 'function' ||
      typeof upstream.free !== 'function'
    ) {
      throw new InvalidArgumentError('upstream', upstream, 'an Allocator');
    }
    const classes = resolveClasses(options.sizeClasses ?? 'default');
    const slabSize = options.slabSize ?? 64 * 1024;
    if (!isPowerOfTwo(slabSize)) {
      throw new InvalidArgumentError('slabSize', slabSize, 'a power of two number of bytes');
    }
    const maxEmptySlabs = options.maxEmptySlabs ?? 1;
    checkNonNegativeInteger(maxEmptySlabs, 'maxEmptySlabs');

    this.upstream = upstream;
    this.sizeClasses = classes;
    this.slabSize = slabSize;
    this.maxEmptySlabs = maxEmptySlabs;
    this.maxRequestSize = classes[classes.length - 1]!;
    const count = classes.length;
    this.classCount = count;
    this.classInts = new Int32Array(count * CLASS_INTS);
    this.classFigures = new Float64Array(count * CLASS_FIGURES);
    this.classLive = new Float64Array(count);
    this.classCurrent = Array.from({ length: count }, () => null);
    let alignment = Number.POSITIVE_INFINITY;
    for (let c = 0; c < count; c++) {
      const size = classes[c]!;
      let slabBytes = slabSize;
      while (Math.floor(slabBytes / size) < MIN_OBJECTS_PER_SLAB) slabBytes *= 2;
      const objects = Math.floor(slabBytes / size);
      if (objects > MAX_OBJECTS_PER_SLAB) {
        throw new InvalidArgumentError(
          'slabSize',
          slabSize,
          `at most ${MAX_OBJECTS_PER_SLAB} objects of the smallest class (${size} B) per slab`,
        );
      }
      const classAlignment = powerOfTwoDividing(size);
      alignment = Math.min(alignment, classAlignment);
      const f = c * CLASS_FIGURES;
      this.classFigures[f + CLASS_SIZE] = size;
      this.classFigures[f + CLASS_ALIGNMENT] = classAlignment;
      this.classFigures[f + CLASS_SLAB_BYTES] = slabBytes;
      this.classFigures[f + CLASS_SLAB_ALIGNMENT] = Math.max(slabSize, classAlignment);
      const i = c * CLASS_INTS;
      this.classInts[i + CLASS_OBJECTS] = objects;
      this.classInts[i + CLASS_HEAD] = -1;
      this.classInts[i + CLASS_TAIL] = -1;
    }
    this.alignment = alignment;

    // A power-of-two granule keeps size × (1 / granule) exact; it grows to bound the table.
    let granule = alignment;
    while (this.maxRequestSize / granule >= MAX_LOOKUP_ENTRIES) granule *= 2;
    const entries = Math.ceil(this.maxRequestSize / granule) + 1;
    const lookup = new Uint16Array(entries);
    for (let slot = 0, c = 0; slot < entries; slot++) {
      const smallest = Math.max(1, (slot - 1) * granule + 1);
      while (c < count - 1 && classes[c]! < smallest) c++;
      lookup[slot] = c;
    }
    this.lookup = lookup;
    this.inverseGranule = 1 / granule;
    this.pages = new PageMap();
    this.inversePage = 1 / slabSize;
    this.records = [];
    this.spareIds = [];
    this.forgetRecent();
  }

  allocate(size: number, alignment?: number): number | null {
    // Hot path: default alignment and a valid size within the classes; the rest is out of line.
    if (alignment !== undefined || !(size <= this.maxRequestSize && size > 0)) {
      return this.allocateChecked(size, alignment);
    }
    if (!Number.isInteger(size)) checkSize(size); // throws
    let c = this.lookup[Math.ceil(size * this.inverseGranule)]!;
    while (this.classFigures[c * CLASS_FIGURES + CLASS_SIZE]! < size) c++;
    return this.take(c, size);
  }

  free(address: number): void {
    let record = this.recentRecord;
    if (!(typeof address === 'number' && address >= this.recentBase && address < this.recentEnd)) {
      record = this.findRecord(address);
    }
    const offset = address - record[RECORD_BASE]!;
    const object = Math.round(offset * record[RECORD_INVERSE]!);
    const word = RECORD_HEADER + object;
    if (
      !(
        object * record[RECORD_SIZE]! === offset &&
        object < record[RECORD_OBJECTS]! &&
        record[word]! > 0
      )
    ) {
      this.throwInvalidFree(address, record, offset);
    }
    record[word] = -record[RECORD_FREE_HEAD]! - 1;
    record[RECORD_FREE_HEAD] = object;
    const free = record[RECORD_FREE]! + 1;
    record[RECORD_FREE] = free;
    const c = record[RECORD_CLASS]!;
    this.classLive[c]!--;
    if (free === record[RECORD_OBJECTS]) {
      // Now empty. Commonly it is under the limit and already last on the list (the only slab of a
      // class that allocates and frees in turn): it is only counted.
      const empty = c * CLASS_INTS + CLASS_EMPTY;
      if (record[RECORD_NEXT]! < 0 && this.classInts[empty]! < this.maxEmptySlabs) {
        this.classInts[empty]!++;
      } else {
        this.becameEmpty(c, record);
      }
    } else if (free === 1) {
      this.becameNotFull(c, record);
    }
  }

  usableSize(address: number): number {
    const record = this.liveRecordOf(address);
    if (record === null) {
      throw new InvalidArgumentError('address', address, 'the start of a live object of this slab');
    }
    return record[RECORD_SIZE]!;
  }

  owns(address: number): boolean {
    return this.liveRecordOf(address) !== null;
  }

  usage(): Usage {
    let capacity = 0;
    let allocatedBytes = 0;
    let freeBytes = 0;
    let largestFreeBlock = 0;
    let liveCount = 0;
    let freeBlockCount = 0;
    for (let c = 0; c < this.classCount; c++) {
      const f = c * CLASS_FIGURES;
      const i = c * CLASS_INTS;
      const size = this.classFigures[f + CLASS_SIZE]!;
      const live = this.classLive[c]!;
      const free = this.classInts[i + CLASS_SLABS]! * this.classInts[i + CLASS_OBJECTS]! - live;
      capacity += this.classFigures[f + CLASS_HELD]!;
      allocatedBytes += live * size;
      freeBytes += free * size;
      liveCount += live;
      freeBlockCount += free;
      if (free > 0) largestFreeBlock = size;
    }
    return {
      capacity,
      allocatedBytes,
      freeBytes,
      overheadBytes: capacity - allocatedBytes - freeBytes,
      largestFreeBlock,
      liveCount,
      freeBlockCount,
    };
  }

  classStats(): SlabClassStats[] {
    // Requested bytes are summed here rather than kept on the hot paths: O(objects held).
    const requested = new Float64Array(this.classCount);
    for (const record of this.heldRecords()) {
      let sum = 0;
      for (let object = 0; object < record[RECORD_OBJECTS]!; object++) {
        const word = record[RECORD_HEADER + object]!;
        if (word > 0) sum += word;
      }
      requested[record[RECORD_CLASS]!]! += sum;
    }
    const stats: SlabClassStats[] = [];
    for (let c = 0; c < this.classCount; c++) {
      const f = c * CLASS_FIGURES;
      const i = c * CLASS_INTS;
      const size = this.classFigures[f + CLASS_SIZE]!;
      const objectsPerSlab = this.classInts[i + CLASS_OBJECTS]!;
      const slabs = this.classInts[i + CLASS_SLABS]!;
      const fullSlabs = this.classInts[i + CLASS_FULL]!;
      const emptySlabs = this.classInts[i + CLASS_EMPTY]!;
      const liveObjects = this.classLive[c]!;
      const requestedBytes = requested[c]!;
      const heldBytes = this.classFigures[f + CLASS_HELD]!;
      stats.push({
        size,
        alignment: this.classFigures[f + CLASS_ALIGNMENT]!,
        slabBytes: this.classFigures[f + CLASS_SLAB_BYTES]!,
        objectsPerSlab,
        liveObjects,
        freeObjects: slabs * objectsPerSlab - liveObjects,
        fullSlabs,
        partialSlabs: slabs - fullSlabs - emptySlabs,
        emptySlabs,
        heldBytes,
        requestedBytes,
        roundingWasteBytes: liveObjects * size - requestedBytes,
        tailWasteBytes: heldBytes - slabs * objectsPerSlab * size,
      });
    }
    return stats;
  }

  layout(): Layout {
    const held = this.heldRecords();
    held.sort((a, b) => a[RECORD_UPSTREAM]! - b[RECORD_UPSTREAM]!);
    const segments: LayoutSegment[] = held.map((record) => {
      const size = record[RECORD_SIZE]!;
      const base = record[RECORD_BASE]!;
      const blocks: LayoutBlock[] = [];
      for (let object = 0; object < record[RECORD_OBJECTS]!; object++) {
        const address = base + object * size;
        const requestedSize = record[RECORD_HEADER + object]!;
        blocks.push(
          requestedSize > 0
            ? { address, size, free: false, requestedSize }
            : { address, size, free: true },
        );
      }
      const segment = record[RECORD_UPSTREAM]!;
      return { address: segment, size: record[RECORD_HELD]!, blocks, pool: `${size} B` };
    });
    return { segments };
  }

  reset(): void {
    for (const record of this.heldRecords()) this.upstream.free(record[RECORD_UPSTREAM]!);
    for (let c = 0; c < this.classCount; c++) {
      const i = c * CLASS_INTS;
      this.classInts.fill(0, i + CLASS_SLABS, i + CLASS_INTS);
      this.classInts[i + CLASS_HEAD] = -1;
      this.classInts[i + CLASS_TAIL] = -1;
      this.classFigures[c * CLASS_FIGURES + CLASS_HELD] = 0;
      this.classLive[c] = 0;
      this.classCurrent[c] = null;
    }
    this.pages.clear();
    this.records = [];
    this.spareIds = [];
    this.forgetRecent();
  }

  /** Allocation with an explicit alignment, or a size the hot path does not take. */
  private allocateChecked(size: number, alignment: number | undefined): number | null {
    const align = checkRequest(size, alignment, this.alignment);
    if (size > this.maxRequestSize) return null;
    const figures = this.classFigures;
    let c = this.lookup[Math.ceil(size * this.inverseGranule)]!;
    while (figures[c * CLASS_FIGURES + CLASS_SIZE]! < size) c++;
    // A larger class whose size has more factors of two guarantees more alignment.
    while (c < this.classCount && figures[c * CLASS_FIGURES + CLASS_ALIGNMENT]! < align) c++;
    return c < this.classCount ? this.take(c, size) : null;
  }

  /** Hands out an object of class `c` for a request of `size` bytes. */
  private take(c: number, size: number): number | null {
    let record = this.classCurrent[c] as Float64Array | null;
    if (record === null) {
      record = this.addSlab(c);
      if (record === null) return null;
    }
    let object = record[RECORD_FREE_HEAD]!;
    if (object >= 0) {
      record[RECORD_FREE_HEAD] = -record[RECORD_HEADER + object]! - 1;
    } else {
      object = record[RECORD_BUMP]!;
      record[RECORD_BUMP] = object + 1;
    }
    record[RECORD_HEADER + object] = size;
    const free = record[RECORD_FREE]! - 1;
    record[RECORD_FREE] = free;
    this.classLive[c]!++;
    if (free === 0) this.becameFull(c, record);
    else if (free === record[RECORD_OBJECTS]! - 1) this.classInts[c * CLASS_INTS + CLASS_EMPTY]!--;
    return record[RECORD_BASE]! + object * record[RECORD_SIZE]!;
  }

  /** A take left `record` full: off the list. */
  private becameFull(c: number, record: Float64Array): void {
    this.unlink(c, record);
    this.classInts[c * CLASS_INTS + CLASS_FULL]!++;
  }

  /** A free left the full `record` with one free object: back on the list, at the head. */
  private becameNotFull(c: number, record: Float64Array): void {
    this.classInts[c * CLASS_INTS + CLASS_FULL]!--;
    this.pushHead(c, record);
  }

  /** A free emptied `record`: to the tail of the list, or back upstream past the limit. */
  private becameEmpty(c: number, record: Float64Array): void {
    const i = c * CLASS_INTS;
    if (this.classInts[i + CLASS_EMPTY]! >= this.maxEmptySlabs) {
      this.releaseSlab(c, record);
    } else {
      this.classInts[i + CLASS_EMPTY]!++;
      if (this.classInts[i + CLASS_TAIL] !== record[RECORD_ID]) {
        this.unlink(c, record);
        this.pushTail(c, record);
      }
    }
  }

  /** Throws the InvalidFreeError for `address`, which is not a live object (slow path). */
  private throwInvalidFree(address: number, record: Float64Array, offset: number): never {
    const reason = record === EMPTY_RECORD ? 'foreign-address' : this.classify(record, offset);
    throw new InvalidFreeError(address, reason, 'slab');
  }

  /** Record of the slab whose pages hold `address`, or {@link EMPTY_RECORD}. */
  private recordOf(address: number): Float64Array {
    if (typeof address !== 'number') return EMPTY_RECORD;
    if (address >= this.recentBase && address < this.recentEnd) return this.recentRecord;
    return this.findRecord(address);
  }

  /** Looks `address` up in the page map and remembers the slab found. */
  private findRecord(address: number): Float64Array {
    if (typeof address !== 'number' || !(address >= 0)) return EMPTY_RECORD; // also NaN
    const id = this.pages.get(Math.floor(address * this.inversePage));
    if (id < 0) return EMPTY_RECORD;
    const record = this.records[id]!;
    this.recentBase = record[RECORD_BASE]!;
    this.recentEnd = record[RECORD_BASE]! + record[RECORD_SPAN]!;
    this.recentRecord = record;
    return record;
  }

  /** Empties the one-slab lookup cache (when its slab goes back upstream). */
  private forgetRecent(): void {
    this.recentBase = Number.POSITIVE_INFINITY;
    this.recentEnd = Number.NEGATIVE_INFINITY;
    this.recentRecord = EMPTY_RECORD;
  }

  /** Record of the slab holding a live object that starts at `address`, or null. */
  private liveRecordOf(address: number): Float64Array | null {
    const record = this.recordOf(address);
    if (record === EMPTY_RECORD) return null;
    const offset = address - record[RECORD_BASE]!;
    const object = Math.round(offset * record[RECORD_INVERSE]!);
    const live =
      object * record[RECORD_SIZE]! === offset &&
      object < record[RECORD_OBJECTS]! &&
      record[RECORD_HEADER + object]! > 0;
    return live ? record : null;
  }

  /** Records of the slabs held, in id order. */
  private heldRecords(): Float64Array[] {
    return this.records.filter((record) => record[RECORD_IN_USE] === 1);
  }

  /** Takes a slab for class `c` from the upstream; null (and no change) when it has none. */
  private addSlab(c: number): Float64Array | null {
    const f = c * CLASS_FIGURES;
    const bytes = this.classFigures[f + CLASS_SLAB_BYTES]!;
    const slabAlignment = this.classFigures[f + CLASS_SLAB_ALIGNMENT]!;
    let address = this.upstream.allocate(bytes, slabAlignment);
    let base = address ?? 0;
    if (address === null || address % slabAlignment !== 0) {
      // The upstream cannot (or did not) align the slab: take a padded run and align inside it.
      if (address !== null) this.upstream.free(address);
      address = this.upstream.allocate(bytes + slabAlignment - 1);
      if (address === null) return null;
      base = alignUp(address, slabAlignment);
    }
    const held = this.upstream.usableSize(address);
    const i = c * CLASS_INTS;
    const objects = this.classInts[i + CLASS_OBJECTS]!;
    const size = this.classFigures[f + CLASS_SIZE]!;
    // A recycled id keeps its record when it is long enough: every object word is ≤ 0 once empty.
    let id = this.spareIds.pop();
    let record: Float64Array;
    if (id === undefined) {
      id = this.records.length;
      record = new Float64Array(RECORD_HEADER + objects);
      this.records.push(record);
    } else {
      record = this.records[id]!;
      if (record.length < RECORD_HEADER + objects) {
        record = new Float64Array(RECORD_HEADER + objects);
        this.records[id] = record;
      }
    }
    record[RECORD_BASE] = base;
    record[RECORD_UPSTREAM] = address;
    record[RECORD_SIZE] = size;
    record[RECORD_INVERSE] = 1 / size;
    record[RECORD_FREE_HEAD] = -1;
    record[RECORD_FREE] = objects;
    record[RECORD_OBJECTS] = objects;
    record[RECORD_BUMP] = 0;
    record[RECORD_CLASS] = c;
    record[RECORD_ID] = id;
    record[RECORD_HELD] = held;
    record[RECORD_SPAN] = bytes;
    record[RECORD_IN_USE] = 1;
    const firstPage = base * this.inversePage;
    const pages = bytes / this.slabSize;
    for (let page = 0; page < pages; page++) this.pages.set(firstPage + page, id);
    this.pushHead(c, record);
    this.classInts[i + CLASS_SLABS]!++;
    this.classInts[i + CLASS_EMPTY]!++;
    this.classFigures[f + CLASS_HELD]! += held;
    return record;
  }

  private releaseSlab(c: number, record: Float64Array): void {
    this.unlink(c, record);
    if (this.recentRecord === record) this.forgetRecent();
    const firstPage = record[RECORD_BASE]! * this.inversePage;
    const pages = record[RECORD_SPAN]! / this.slabSize;
    for (let page = 0; page < pages; page++) this.pages.delete(firstPage + page);
    record[RECORD_IN_USE] = 0;
    this.classInts[c * CLASS_INTS + CLASS_SLABS]!--;
    this.classFigures[c * CLASS_FIGURES + CLASS_HELD]! -= record[RECORD_HELD]!;
    this.spareIds.push(record[RECORD_ID]!);
    this.upstream.free(record[RECORD_UPSTREAM]!);
  }

  private pushHead(c: number, record: Float64Array): void {
    const i = c * CLASS_INTS;
    const head = this.classInts[i + CLASS_HEAD]!;
    const id = record[RECORD_ID]!;
    record[RECORD_PREV] = -1;
    record[RECORD_NEXT] = head;
    if (head >= 0) this.records[head]![RECORD_PREV] = id;
    else this.classInts[i + CLASS_TAIL] = id;
    this.classInts[i + CLASS_HEAD] = id;
    this.classCurrent[c] = record;
  }

  private pushTail(c: number, record: Float64Array): void {
    const i = c * CLASS_INTS;
    const tail = this.classInts[i + CLASS_TAIL]!;
    const id = record[RECORD_ID]!;
    record[RECORD_NEXT] = -1;
    record[RECORD_PREV] = tail;
    if (tail >= 0) this.records[tail]![RECORD_NEXT] = id;
    else {
      this.classInts[i + CLASS_HEAD] = id;
      this.classCurrent[c] = record;
    }
    this.classInts[i + CLASS_TAIL] = id;
  }

  private unlink(c: number, record: Float64Array): void {
    const i = c * CLASS_INTS;
    const next = record[RECORD_NEXT]!;
    const prev = record[RECORD_PREV]!;
    if (prev >= 0) this.records[prev]![RECORD_NEXT] = next;
    else {
      this.classInts[i + CLASS_HEAD] = next;
      this.classCurrent[c] = next >= 0 ? this.records[next]! : null;
    }
    if (next >= 0) this.records[next]![RECORD_PREV] = prev;
    else this.classInts[i + CLASS_TAIL] = prev;
  }

  /** Why `offset` into the slab of `record` is not a live object (slow path). */
  private classify(record: Float64Array, offset: number): InvalidFreeReason {
    const size = record[RECORD_SIZE]!;
    const object = Math.floor(offset / size);
    if (!Number.isInteger(offset) || object >= record[RECORD_OBJECTS]!) return 'not-live';
    const live = record[RECORD_HEADER + object]! > 0;
    if (object * size !== offset) return live ? 'interior-pointer' : 'not-live';
    // An object below the bump index was handed out before, so it is on the free list.
    return object < record[RECORD_BUMP]! ? 'double-free' : 'not-live';
  }
}

function resolveClasses(option: readonly number[] | 'default' | 'transformer'): readonly number[] {
  if (option === 'default') return defaultSizeClasses;
  if (option === 'transformer') return transformerSizeClasses;
  if (!Array.isArray(option) || option.length === 0 || option.length > 0xffff) {
    throw new InvalidArgumentError(
      'sizeClasses',
      option,
      "'default', 'transformer' or a non-empty array of at most 65535 sizes",
    );
  }
  for (let i = 0; i < option.length; i++) {
    const size = option[i];
    if (!Number.isSafeInteger(size) || size <= 0 || (i > 0 && size <= option[i - 1])) {
      throw new InvalidArgumentError(
        'sizeClasses',
        option,
        'strictly ascending positive safe integers (bytes)',
      );
    }
  }
  return Object.freeze([...option]);
}

/** Largest power of two dividing `value` (a positive safe integer). */
function powerOfTwoDividing(value: number): number {
  let p = 1;
  while (value % (p * 2) === 0) p *= 2;
  return p;
}

/**
 * Makes a slab allocator over `options.upstream`.
 *
 * @example
 * ```ts
 * const objects = slab({ upstream: buddy({ capacity: 1 << 26 }) });
 * const address = objects.allocate(100); // a 112-byte object, 16-byte aligned
 * ```
 * @throws InvalidArgumentError when an option is invalid.
 */
export function slab<Upstream extends Allocator>(options: SlabOptions<Upstream>): Slab<Upstream> {
  return new SlabAllocator(options);
}
