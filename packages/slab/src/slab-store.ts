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
} from './layout';
import { PageMap } from './page-map';
import { defaultSizeClasses, transformerSizeClasses } from './size-classes';
import { ClassHead, isEmpty, SlabRecord } from './slab-record';

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

/**
 * Stands for "no slab": its inverse is NaN and it has no object word, so no address passes the
 * checks on free.
 */
const EMPTY_RECORD = new SlabRecord(0);

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
  /** Each class's head: the record of the head of its list, where the next object comes from. */
  declare protected readonly heads: ClassHead[];
  /** Size → class: entry s is the smallest class ≥ (s − 1) × granule + 1. */
  declare protected readonly lookup: Uint16Array;
  declare protected readonly inverseGranule: number;
  /** The size of the last hot-path allocation and its class: a size asked again skips the lookup. */
  declare protected lastSize: number;
  declare protected lastHead: ClassHead;
  /**
   * The object the last allocation returned (`take` sets them) and the size asked. While its free
   * may be deferred `liveAddress` is its address; once its free is deferred `deferredSize` is that
   * size (see `SlabAllocator.free`). Both are NaN otherwise, and at most one of them is a number.
   */
  declare protected pinAddress: number;
  declare protected pinSize: number;
  declare protected liveAddress: number;
  declare protected deferredSize: number;
  /** Address → slab: page `floor(address / slabSize)` → slab id. */
  declare protected readonly pages: PageMap;
  declare protected readonly inversePage: number;

  /** Slab records by id (ids are recycled; a spare id keeps its record for reuse). */
  declare protected records: SlabRecord[];
  declare protected spareIds: number[];
  /**
   * The slab of the last page-map lookup, which an address in its `[base, base + span)` skips
   * ({@link EMPTY_RECORD}'s span is 0).
   */
  declare protected recentRecord: SlabRecord;

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
    this.heads = Array.from({ length: count }, (_, c) => new ClassHead(c));
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
    this.lastHead = this.heads[0]!;
    this.pinAddress = Number.NaN;
    this.pinSize = Number.NaN;
    this.liveAddress = Number.NaN;
    this.deferredSize = Number.NaN;
    this.pages = new PageMap();
    this.inversePage = 1 / slabSize;
    this.records = [];
    this.spareIds = [];
    this.forgetRecent();
  }

  /** A take left `record` full: off the list. */
  protected becameFull(c: number, record: SlabRecord): void {
    this.unlink(c, record);
    this.classInts[c * CLASS_INTS + CLASS_FULL]!++;
  }

  /** A free left the full `record` with one free object: back on the list, at the head. */
  protected becameNotFull(c: number, record: SlabRecord): void {
    this.classInts[c * CLASS_INTS + CLASS_FULL]!--;
    this.pushHead(c, record);
  }

  /** A free emptied `record`: to the tail of the list, or back upstream past the limit. */
  protected becameEmpty(c: number, record: SlabRecord): void {
    const i = c * CLASS_INTS;
    // The class's other empty slabs: none but the counted ones, as the head (when it is not
    // `record`) is ahead of `record`, so not empty.
    const others = this.classInts[i + CLASS_EMPTY]!;
    if (record.prev >= 0) this.classInts[i + CLASS_EMPTY] = others + 1; // counted now
    if (others >= this.maxEmptySlabs) {
      this.releaseSlab(c, record);
    } else if (this.classInts[i + CLASS_TAIL] !== record.id) {
      this.unlink(c, record);
      this.pushTail(c, record);
    }
  }

  /** Empty slabs of class `c`: the counted ones, and the head of the list when it is empty. */
  protected emptySlabs(c: number): number {
    const head = this.heads[c]!.current;
    const counted = this.classInts[c * CLASS_INTS + CLASS_EMPTY]!;
    return head !== null && isEmpty(head) ? counted + 1 : counted;
  }

  /**
   * The InvalidFreeError for `address`, which is not a live object (slow path). The caller throws
   * it, so that the compiler sees the fast path's checks hold after the test.
   */
  protected invalidFree(address: number, record: SlabRecord, offset: number): InvalidFreeError {
    const reason = record === EMPTY_RECORD ? 'foreign-address' : this.classify(record, offset);
    return new InvalidFreeError(address, reason, 'slab');
  }

  /** Record of the slab whose pages hold `address`, or {@link EMPTY_RECORD}. */
  protected recordOf(address: number): SlabRecord {
    if (typeof address !== 'number') return EMPTY_RECORD;
    const recent = this.recentRecord;
    const offset = address - recent.base;
    if (offset >= 0 && offset < recent.span) return recent;
    return this.findRecord(address);
  }

  /** Looks `address` up in the page map and remembers the slab found. */
  protected findRecord(address: number): SlabRecord {
    if (typeof address !== 'number' || !(address >= 0)) return EMPTY_RECORD; // also NaN
    const id = this.pages.get(Math.floor(address * this.inversePage));
    if (id < 0) return EMPTY_RECORD;
    const record = this.records[id]!;
    this.recentRecord = record;
    return record;
  }

  /** Empties the one-slab lookup cache (when its slab goes back upstream). */
  protected forgetRecent(): void {
    this.recentRecord = EMPTY_RECORD;
  }

  /** Record of the slab holding a live object that starts at `address`, or null. */
  protected liveRecordOf(address: number): SlabRecord | null {
    const record = this.recordOf(address);
    if (record === EMPTY_RECORD) return null;
    const offset = address - record.base;
    const object = Math.round(offset * record.inverse);
    const live =
      object * record.size === offset && object < record.objects && record.words[object]! > 0;
    return live ? record : null;
  }

  /**
   * Live objects per class, summed over the slabs held: O(slabs). Kept off the hot paths, which
   * count free objects per slab only.
   */
  protected liveByClass(): Float64Array {
    const live = new Float64Array(this.classCount);
    for (const record of this.records) {
      if (record.inUse) {
        live[record.cls]! += record.objects - record.free;
      }
    }
    return live;
  }

  /** Records of the slabs held, in id order. */
  protected heldRecords(): SlabRecord[] {
    return this.records.filter((record) => record.inUse);
  }

  /** Takes a slab for class `c` from the upstream; null (and no change) when it has none. */
  protected addSlab(c: number): SlabRecord | null {
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
    let record: SlabRecord;
    if (id === undefined) {
      id = this.records.length;
      record = new SlabRecord(objects);
      this.records.push(record);
    } else {
      record = this.records[id]!;
      if (record.words.length !== objects) record.words = new Float64Array(objects);
    }
    record.base = base;
    record.upstream = address;
    record.size = size;
    record.inverse = 1 / size;
    record.freeHead = -1;
    record.free = objects;
    record.objects = objects;
    record.bump = 0;
    record.cls = c;
    record.id = id;
    record.held = held;
    record.span = bytes;
    record.inUse = true;
    const firstPage = base * this.inversePage;
    const pages = bytes / this.slabSize;
    for (let page = 0; page < pages; page++) this.pages.set(firstPage + page, id);
    this.pushHead(c, record);
    this.classInts[i + CLASS_SLABS]!++;
    this.classFigures[f + CLASS_HELD]! += held;
    return record;
  }

  protected releaseSlab(c: number, record: SlabRecord): void {
    this.unlink(c, record);
    if (this.recentRecord === record) this.forgetRecent();
    const firstPage = record.base * this.inversePage;
    const pages = record.span / this.slabSize;
    for (let page = 0; page < pages; page++) this.pages.delete(firstPage + page);
    record.inUse = false;
    this.classInts[c * CLASS_INTS + CLASS_SLABS]!--;
    this.classFigures[c * CLASS_FIGURES + CLASS_HELD]! -= record.held;
    this.spareIds.push(record.id);
    this.upstream.free(record.upstream);
  }

  // The list's three changes keep CLASS_EMPTY the count of empty slabs on the list other than its
  // head: a slab that leaves the head's place is counted if empty, one that takes it is not.

  /** Puts `record`, on no list, at the head of class `c`'s list. */
  protected pushHead(c: number, record: SlabRecord): void {
    const i = c * CLASS_INTS;
    const head = this.classInts[i + CLASS_HEAD]!;
    const id = record.id;
    record.prev = -1;
    record.next = head;
    if (head >= 0) {
      const old = this.records[head]!;
      old.prev = id;
      if (isEmpty(old)) this.classInts[i + CLASS_EMPTY]!++;
    } else {
      this.classInts[i + CLASS_TAIL] = id;
    }
    this.classInts[i + CLASS_HEAD] = id;
    this.heads[c]!.current = record;
  }

  /** Puts `record`, on no list, at the tail of class `c`'s list. */
  protected pushTail(c: number, record: SlabRecord): void {
    const i = c * CLASS_INTS;
    const tail = this.classInts[i + CLASS_TAIL]!;
    const id = record.id;
    record.next = -1;
    record.prev = tail;
    if (tail >= 0) {
      this.records[tail]!.next = id;
      if (isEmpty(record)) this.classInts[i + CLASS_EMPTY]!++;
    } else {
      this.classInts[i + CLASS_HEAD] = id;
      this.heads[c]!.current = record;
    }
    this.classInts[i + CLASS_TAIL] = id;
  }

  /** Takes `record` off class `c`'s list. */
  protected unlink(c: number, record: SlabRecord): void {
    const i = c * CLASS_INTS;
    const next = record.next;
    const prev = record.prev;
    if (prev >= 0) {
      this.records[prev]!.next = next;
      if (isEmpty(record)) this.classInts[i + CLASS_EMPTY]!--;
    } else {
      this.classInts[i + CLASS_HEAD] = next;
      const head = next >= 0 ? this.records[next]! : null;
      this.heads[c]!.current = head;
      if (head !== null && isEmpty(head)) this.classInts[i + CLASS_EMPTY]!--;
    }
    if (next >= 0) this.records[next]!.prev = prev;
    else this.classInts[i + CLASS_TAIL] = prev;
  }

  /** Why `offset` into the slab of `record` is not a live object (slow path). */
  protected classify(record: SlabRecord, offset: number): InvalidFreeReason {
    const size = record.size;
    const object = Math.floor(offset / size);
    if (!Number.isInteger(offset) || object >= record.objects) return 'not-live';
    const live = record.words[object]! > 0;
    if (object * size !== offset) return live ? 'interior-pointer' : 'not-live';
    // An object below the bump index was handed out before, so it is on the free list.
    return object < record.bump ? 'double-free' : 'not-live';
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
