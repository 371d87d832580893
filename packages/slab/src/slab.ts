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
 * - A same-size pair defers its free: the free of the object the last allocation returned, with
 *   no change to the slabs in between, waits while the next allocation of that size would take the
 *   same object back with nothing else moving (`take` decides it; see `free`). An allocation of
 *   that size takes it back in O(1); any other call first runs the free as it would have run
 *   (`settle`; `owns` only says no for the waiting object), so no address, figure or upstream call
 *   differs.
 * - Free finds the slab through a page map (`floor(address / slabSize)` → slab id, the shared
 *   `AddressMap` of `@allot/blocks`), then the object by division; the object's word (> 0 only
 *   while live) catches double frees and interior pointers before anything changes.
 * - Each slab is one record (`slab-record.ts`): a header of plain fields (base, object size,
 *   free-list head, counts, list links) and a Float64Array of the object words. Allocation and free touch the
 *   record, one per-class counter and nothing else in the common case, and allocate nothing.
 * - Object addresses are aligned to the largest power of two dividing the class size (slabs are
 *   aligned to at least that much); a request that asks for more goes to the smallest larger class
 *   that guarantees it, or returns `null`.
 */
import {
  type Adaptor,
  type Allocator,
  checkRequest,
  checkSize,
  InvalidArgumentError,
  type Layout,
  type LayoutBlock,
  type LayoutSegment,
  type Usage,
} from '@allot/core';
import {
  CLASS_ALIGNMENT,
  CLASS_FIGURES,
  CLASS_FULL,
  CLASS_HEAD,
  CLASS_HELD,
  CLASS_INTS,
  CLASS_OBJECTS,
  CLASS_SIZE,
  CLASS_SLAB_BYTES,
  CLASS_SLABS,
  CLASS_TAIL,
} from './layout';
import type { ClassHead } from './slab-record';
import { type SlabOptions, SlabStore } from './slab-store';

export type { SlabOptions } from './slab-store';

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

class SlabAllocator<Upstream extends Allocator>
  extends SlabStore<Upstream>
  implements Slab<Upstream>
{
  allocate(size: number, alignment?: number): number | null {
    // The object whose free was deferred, asked again: it is what the free and this call would
    // have handed out (see `free`), and its word already holds this size.
    if (size === this.deferredSize && alignment === undefined) {
      this.deferredSize = Number.NaN;
      this.liveAddress = this.pinAddress;
      return this.pinAddress;
    }
    // Hot path: default alignment and a valid size within the classes; the rest is out of line.
    if (alignment !== undefined || !(size <= this.maxRequestSize && size > 0)) {
      return this.allocateChecked(size, alignment);
    }
    this.settle();
    let head = this.lastHead;
    if (size !== this.lastSize) {
      if (!Number.isInteger(size)) checkSize(size); // throws
      let c = this.lookup[Math.ceil(size * this.inverseGranule)]!;
      while (this.classFigures[c * CLASS_FIGURES + CLASS_SIZE]! < size) c++;
      head = this.heads[c]!;
      this.lastSize = size;
      this.lastHead = head;
    }
    return this.take(head, size);
  }

  /**
   * Frees `address`. The free of the object the last allocation returned, with no call that
   * changed the slabs in between, is deferred when `take` found that the free and the next
   * allocation of the same size would give and take back that same object with nothing else
   * changing (`liveAddress`). Its word stays live and nothing moves; an allocation of that size
   * takes it back in O(1), and any other call but `owns` settles it first (`settle`, the free as
   * it would have run), so every figure, address and upstream call is the same as without the
   * deferral.
   */
  free(address: number): void {
    if (address === this.liveAddress) {
      this.liveAddress = Number.NaN;
      this.deferredSize = this.pinSize;
      return;
    }
    this.settle();
    this.liveAddress = Number.NaN; // the slabs change: what `take` found no longer holds
    this.release(address);
  }

  /** The free itself: the checks, then the object back on its slab's free list. */
  private release(address: number): void {
    let record = this.recentRecord;
    // A non-number is no slab's (and a symbol or a bigint would throw on the subtraction).
    let offset = typeof address === 'number' ? address - record.base : Number.NaN;
    if (!(offset >= 0 && offset < record.span)) {
      record = this.findRecord(address);
      offset = typeof address === 'number' ? address - record.base : Number.NaN;
    }
    // The nearest object to the offset, which is ≥ 0 and below 2^31 objects: rounded by truncation
    // to an int32 (NaN, from no slab, gives object 0, which "no slab" has no word for). A slab has
    // exactly one word per object, so an object past its last reads `undefined` and fails too.
    const object = (offset * record.inverse + 0.5) | 0;
    const words = record.words;
    if (!(object * record.size === offset && words[object]! > 0)) {
      throw this.invalidFree(address, record, offset);
    }
    words[object] = ~record.freeHead;
    record.freeHead = object;
    const free = record.free + 1;
    record.free = free;
    if (free === record.objects) {
      // Now empty. Commonly it is alone on its class's list (the only slab of a class that
      // allocates and frees in turn), so it is the head, which no count includes, and the one
      // empty slab of its class: nothing changes while one empty slab may be kept.
      if (!(record.next < 0 && record.prev < 0 && this.maxEmptySlabs > 0)) {
        this.becameEmpty(record.cls, record);
      }
    } else if (free === 1) {
      this.becameNotFull(record.cls, record);
    }
  }

  usableSize(address: number): number {
    this.settle();
    const record = this.liveRecordOf(address);
    if (record === null) {
      throw new InvalidArgumentError('address', address, 'the start of a live object of this slab');
    }
    return record.size;
  }

  owns(address: number): boolean {
    // The object the last allocation returned is live while `liveAddress` holds it (as when a
    // combinator asks before each free whose it is); once its free waits, it is not. Nothing else
    // reads differently while a free waits, so nothing is settled here.
    if (address === this.liveAddress) return true;
    if (address === this.pinAddress && !Number.isNaN(this.deferredSize)) return false;
    return this.liveRecordOf(address) !== null;
  }

  usage(): Usage {
    this.settle();
    const liveByClass = this.liveByClass();
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
      const live = liveByClass[c]!;
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
    this.settle();
    // Requested bytes are summed here rather than kept on the hot paths: O(objects held).
    const requested = new Float64Array(this.classCount);
    const live = this.liveByClass();
    for (const record of this.heldRecords()) {
      let sum = 0;
      for (let object = 0; object < record.objects; object++) {
        const word = record.words[object]!;
        if (word > 0) sum += word;
      }
      requested[record.cls]! += sum;
    }
    const stats: SlabClassStats[] = [];
    for (let c = 0; c < this.classCount; c++) {
      const f = c * CLASS_FIGURES;
      const i = c * CLASS_INTS;
      const size = this.classFigures[f + CLASS_SIZE]!;
      const objectsPerSlab = this.classInts[i + CLASS_OBJECTS]!;
      const slabs = this.classInts[i + CLASS_SLABS]!;
      const fullSlabs = this.classInts[i + CLASS_FULL]!;
      const emptySlabs = this.emptySlabs(c);
      const liveObjects = live[c]!;
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
    this.settle();
    const held = this.heldRecords();
    held.sort((a, b) => a.upstream - b.upstream);
    const segments: LayoutSegment[] = held.map((record) => {
      const size = record.size;
      const base = record.base;
      const blocks: LayoutBlock[] = [];
      for (let object = 0; object < record.objects; object++) {
        const address = base + object * size;
        const requestedSize = record.words[object]!;
        blocks.push(
          requestedSize > 0
            ? { address, size, free: false, requestedSize }
            : { address, size, free: true },
        );
      }
      const segment = record.upstream;
      return { address: segment, size: record.held, blocks, pool: `${size} B` };
    });
    return { segments };
  }

  reset(): void {
    this.liveAddress = Number.NaN;
    this.deferredSize = Number.NaN;
    for (const record of this.heldRecords()) this.upstream.free(record.upstream);
    for (let c = 0; c < this.classCount; c++) {
      const i = c * CLASS_INTS;
      this.classInts.fill(0, i + CLASS_SLABS, i + CLASS_INTS);
      this.classInts[i + CLASS_HEAD] = -1;
      this.classInts[i + CLASS_TAIL] = -1;
      this.classFigures[c * CLASS_FIGURES + CLASS_HELD] = 0;
      this.heads[c]!.current = null;
    }
    this.pages.clear();
    // Emptied in place: a fresh array would change the shape V8 compiled the hot paths against, and
    // the first calls after a reset would leave the optimised code.
    this.records.length = 0;
    this.spareIds.length = 0;
    this.forgetRecent();
  }

  /** Allocation with an explicit alignment, or a size the hot path does not take. */
  private allocateChecked(size: number, alignment: number | undefined): number | null {
    this.settle();
    const align = checkRequest(size, alignment, this.alignment);
    if (size > this.maxRequestSize) return null;
    const figures = this.classFigures;
    let c = this.lookup[Math.ceil(size * this.inverseGranule)]!;
    while (figures[c * CLASS_FIGURES + CLASS_SIZE]! < size) c++;
    // A larger class whose size has more factors of two guarantees more alignment.
    while (c < this.classCount && figures[c * CLASS_FIGURES + CLASS_ALIGNMENT]! < align) c++;
    if (c === this.classCount) return null;
    const address = this.take(this.heads[c]!, size);
    // A larger class may have served it: its object is not the one a default-aligned request of the
    // same size would get back, and `take` moved the pin off the object pinned before, so no free
    // is deferred until the next allocation on the hot path.
    this.liveAddress = Number.NaN;
    return address;
  }

  /** Gives the object whose free was deferred back to its slab, as its free would have. */
  private settle(): void {
    if (!Number.isNaN(this.deferredSize)) {
      this.deferredSize = Number.NaN;
      this.release(this.pinAddress);
    }
  }

  /**
   * Hands out an object of the class of `head` for a request of `size` bytes, and pins it: its
   * free may be deferred (`liveAddress` is its address) when freeing it now would leave its slab
   * the head of its class's list with the object on top of its free list, and change nothing else:
   * the slab is full (a free puts it back at the head), or it stays partial (it is the head: a
   * take takes from the head), or it empties but stays where it is (alone on its list, with an
   * empty slab kept, as `release` leaves it).
   */
  private take(head: ClassHead, size: number): number | null {
    let record = head.current;
    if (record === null) {
      record = this.addSlab(head.cls);
      if (record === null) return null;
    }
    const words = record.words;
    let object = record.freeHead;
    if (object >= 0) {
      record.freeHead = ~words[object]!; // an int32: the free head stays a small integer
    } else {
      object = record.bump;
      record.bump = object + 1;
    }
    words[object] = size;
    const free = record.free - 1;
    record.free = free;
    // The record is its class's head, which the count of empty slabs leaves out: a take changes
    // no count unless it fills the slab.
    if (free === 0) this.becameFull(head.cls, record);
    const address = record.base + object * record.size;
    this.pinAddress = address;
    this.pinSize = size;
    this.liveAddress =
      free === 0 || free + 1 < record.objects || (record.next < 0 && this.maxEmptySlabs > 0)
        ? address
        : Number.NaN;
    return address;
  }
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
