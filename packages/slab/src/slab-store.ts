/**
 * The slabs of a slab allocator: the size-class table, one record per slab, each class's list of
 * slabs with a free object, and the page map from an address to its slab. `SlabStore` keeps them
 * and changes them as slabs are taken, fill, empty and go back upstream; `slab.ts` is the
 * allocation policy on top (its module comment describes the design).
 */
import {
  type Allocator,
  alignUp,
  checkNonNegativeInteger,
  InvalidArgumentError,
  InvalidFreeError,
  type InvalidFreeReason,
  isPowerOfTwo,
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

/** Stands for "no slab": every field is NaN, so no address passes the checks on free. */
const EMPTY_RECORD = new Float64Array(RECORD_HEADER).fill(Number.NaN);

/** The slabs of a slab allocator: what `SlabAllocator` (`slab.ts`) allocates from. */
export abstract class SlabStore<Upstream extends Allocator> {
  // `declare`d fields are assigned in the constructor only, which keeps number fields unboxed.
  declare readonly upstream: Upstream;
  declare readonly sizeClasses: readonly number[];
  declare readonly slabSize: number;
  declare readonly maxEmptySlabs: number;
  declare readonly maxRequestSize: number;
  declare readonly alignment: number;

  declare protected readonly classCount: number;
  declare protected readonly classInts: Int32Array;
  declare protected readonly classFigures: Float64Array;
  /** Record of the head of each class's list, or null: where the next object comes from. */
  declare protected readonly classCurrent: (Float64Array | null)[];
  /** Size → class: entry s is the smallest class ≥ (s − 1) × granule + 1. */
  declare protected readonly lookup: Uint16Array;
  declare protected readonly inverseGranule: number;
  /** The size of the last hot-path allocation and its class: a size asked again skips the lookup. */
  declare protected lastSize: number;
  declare protected lastClass: number;
  /** Address → slab: page `floor(address / slabSize)` → slab id. */
  declare protected readonly pages: PageMap;
  declare protected readonly inversePage: number;

  /** Slab records by id (ids are recycled; a spare id keeps its record for reuse). */
  declare protected records: Float64Array[];
  declare protected spareIds: number[];
  /** The slab of the last page-map lookup: [recentBase, recentEnd) → recentRecord. */
  declare protected recentBase: number;
  declare protected recentEnd: number;
  declare protected recentRecord: Float64Array;

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
    this.lastSize = -1;
    this.lastClass = 0;
    this.pages = new PageMap();
    this.inversePage = 1 / slabSize;
    this.records = [];
    this.spareIds = [];
    this.forgetRecent();
  }

  /** A take left `record` full: off the list. */
  protected becameFull(c: number, record: Float64Array): void {
    this.unlink(c, record);
    this.classInts[c * CLASS_INTS + CLASS_FULL]!++;
  }

  /** A free left the full `record` with one free object: back on the list, at the head. */
  protected becameNotFull(c: number, record: Float64Array): void {
    this.classInts[c * CLASS_INTS + CLASS_FULL]!--;
    this.pushHead(c, record);
  }

  /** A free emptied `record`: to the tail of the list, or back upstream past the limit. */
  protected becameEmpty(c: number, record: Float64Array): void {
    const i = c * CLASS_INTS;
    // The class's other empty slabs: none but the counted ones, as the head (when it is not
    // `record`) is ahead of `record`, so not empty.
    const others = this.classInts[i + CLASS_EMPTY]!;
    if (record[RECORD_PREV]! >= 0) this.classInts[i + CLASS_EMPTY] = others + 1; // counted now
    if (others >= this.maxEmptySlabs) {
      this.releaseSlab(c, record);
    } else if (this.classInts[i + CLASS_TAIL] !== record[RECORD_ID]) {
      this.unlink(c, record);
      this.pushTail(c, record);
    }
  }

  /** Empty slabs of class `c`: the counted ones, and the head of the list when it is empty. */
  protected emptySlabs(c: number): number {
    const head = this.classCurrent[c] ?? null;
    const counted = this.classInts[c * CLASS_INTS + CLASS_EMPTY]!;
    return head !== null && isEmpty(head) ? counted + 1 : counted;
  }

  /** Throws the InvalidFreeError for `address`, which is not a live object (slow path). */
  protected throwInvalidFree(address: number, record: Float64Array, offset: number): never {
    const reason = record === EMPTY_RECORD ? 'foreign-address' : this.classify(record, offset);
    throw new InvalidFreeError(address, reason, 'slab');
  }

  /** Record of the slab whose pages hold `address`, or {@link EMPTY_RECORD}. */
  protected recordOf(address: number): Float64Array {
    if (typeof address !== 'number') return EMPTY_RECORD;
    if (address >= this.recentBase && address < this.recentEnd) return this.recentRecord;
    return this.findRecord(address);
  }

  /** Looks `address` up in the page map and remembers the slab found. */
  protected findRecord(address: number): Float64Array {
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
  protected forgetRecent(): void {
    this.recentBase = Number.POSITIVE_INFINITY;
    this.recentEnd = Number.NEGATIVE_INFINITY;
    this.recentRecord = EMPTY_RECORD;
  }

  /** Record of the slab holding a live object that starts at `address`, or null. */
  protected liveRecordOf(address: number): Float64Array | null {
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

  /**
   * Live objects per class, summed over the slabs held: O(slabs). Kept off the hot paths, which
   * count free objects per slab only.
   */
  protected liveByClass(): Float64Array {
    const live = new Float64Array(this.classCount);
    for (const record of this.records) {
      if (record[RECORD_IN_USE] === 1) {
        live[record[RECORD_CLASS]!]! += record[RECORD_OBJECTS]! - record[RECORD_FREE]!;
      }
    }
    return live;
  }

  /** Records of the slabs held, in id order. */
  protected heldRecords(): Float64Array[] {
    return this.records.filter((record) => record[RECORD_IN_USE] === 1);
  }

  /** Takes a slab for class `c` from the upstream; null (and no change) when it has none. */
  protected addSlab(c: number): Float64Array | null {
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
    this.classFigures[f + CLASS_HELD]! += held;
    return record;
  }

  protected releaseSlab(c: number, record: Float64Array): void {
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

  // The list's three changes keep CLASS_EMPTY the count of empty slabs on the list other than its
  // head: a slab that leaves the head's place is counted if empty, one that takes it is not.

  /** Puts `record`, on no list, at the head of class `c`'s list. */
  protected pushHead(c: number, record: Float64Array): void {
    const i = c * CLASS_INTS;
    const head = this.classInts[i + CLASS_HEAD]!;
    const id = record[RECORD_ID]!;
    record[RECORD_PREV] = -1;
    record[RECORD_NEXT] = head;
    if (head >= 0) {
      const old = this.records[head]!;
      old[RECORD_PREV] = id;
      if (isEmpty(old)) this.classInts[i + CLASS_EMPTY]!++;
    } else {
      this.classInts[i + CLASS_TAIL] = id;
    }
    this.classInts[i + CLASS_HEAD] = id;
    this.classCurrent[c] = record;
  }

  /** Puts `record`, on no list, at the tail of class `c`'s list. */
  protected pushTail(c: number, record: Float64Array): void {
    const i = c * CLASS_INTS;
    const tail = this.classInts[i + CLASS_TAIL]!;
    const id = record[RECORD_ID]!;
    record[RECORD_NEXT] = -1;
    record[RECORD_PREV] = tail;
    if (tail >= 0) {
      this.records[tail]![RECORD_NEXT] = id;
      if (isEmpty(record)) this.classInts[i + CLASS_EMPTY]!++;
    } else {
      this.classInts[i + CLASS_HEAD] = id;
      this.classCurrent[c] = record;
    }
    this.classInts[i + CLASS_TAIL] = id;
  }

  /** Takes `record` off class `c`'s list. */
  protected unlink(c: number, record: Float64Array): void {
    const i = c * CLASS_INTS;
    const next = record[RECORD_NEXT]!;
    const prev = record[RECORD_PREV]!;
    if (prev >= 0) {
      this.records[prev]![RECORD_NEXT] = next;
      if (isEmpty(record)) this.classInts[i + CLASS_EMPTY]!--;
    } else {
      this.classInts[i + CLASS_HEAD] = next;
      const head = next >= 0 ? this.records[next]! : null;
      this.classCurrent[c] = head;
      if (head !== null && isEmpty(head)) this.classInts[i + CLASS_EMPTY]!--;
    }
    if (next >= 0) this.records[next]![RECORD_PREV] = prev;
    else this.classInts[i + CLASS_TAIL] = prev;
  }

  /** Why `offset` into the slab of `record` is not a live object (slow path). */
  protected classify(record: Float64Array, offset: number): InvalidFreeReason {
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

/** Whether the slab of `record` has no live object. */
function isEmpty(record: Float64Array): boolean {
  return record[RECORD_FREE] === record[RECORD_OBJECTS];
}

/** Largest power of two dividing `value` (a positive safe integer). */
function powerOfTwoDividing(value: number): number {
  let p = 1;
  while (value % (p * 2) === 0) p *= 2;
  return p;
}
