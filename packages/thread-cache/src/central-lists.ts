/**
 * The central free lists of the shared heap: every small object that no thread holds, and the
 * spans they are cut from. All of it lives in the heap's state buffer, so every worker's view of
 * the heap sees the same lists; every method here runs with the heap's lock held (the caller takes
 * it: `WorkerSlots.enter`).
 *
 * ```
 *  size class c ── CLASS_PARTIAL_HEAD ──► span ⇄ span ⇄ span     spans with free objects
 *                                          │ SPAN_FREE: free objects in the span
 *                                          ▼
 *  bitmap: one bit per 16-byte unit, set at each free object's start (32 units a word)
 *  objectState: one byte per unit: FREE, LIVE, or CACHED + the slot of the cache holding it
 * ```
 *
 * - `takeObjects` takes a batch with count-leading-zeros over the bitmap, cutting a new span from
 *   the buddy heap when the class has none with free objects.
 * - `giveObject` sets the bit again; a span whose objects are all free goes back to the buddy heap
 *   at once, so freeing everything restores the initial heap exactly.
 * - `usageLocked`, `invalidSmallFree` and `checkAddress` read the same tables.
 */
import type { Buddy } from '@allot/buddy';
import { checkRequest, InvalidFreeError, type InvalidFreeReason, type Usage } from '@allot/core';
import {
  CLASS_CENTRAL_FREE,
  CLASS_PARTIAL_HEAD,
  CLASS_SPANS,
  CLASS_WORDS,
  FIGURE_ACTIVE_SPANS,
  FIGURE_HELD_BYTES,
  FIGURE_HELD_COUNT,
  FIGURE_SPAN_TAIL_BYTES,
  NIL,
  OBJECT_CACHED,
  OBJECT_FREE,
  OBJECT_LIVE,
  type SharedHeapConfig,
  SPAN_FREE,
  SPAN_NEXT,
  SPAN_PREV,
  SPAN_WORDS,
} from './shared-layout';
import { UNIT_BYTES } from './size-classes';

/** @internal The central lists over a heap's state buffer (see the file comment). */
export class CentralLists {
  declare readonly config: SharedHeapConfig;
  declare readonly base: number;
  declare readonly capacity: number;
  declare readonly spanSize: number;
  declare readonly state: SharedArrayBuffer;
  declare readonly buddy: Buddy;
  declare readonly header: Int32Array;
  declare readonly figures: Float64Array;
  declare readonly classWords: Uint32Array;
  declare readonly spanClass: Uint8Array;
  declare readonly spanWords: Uint32Array;
  declare readonly bitmap: Uint32Array;
  declare readonly objectState: Uint8Array;
  /** Units (16 B) of each class, objects per span, class of a request of n units. */
  declare readonly classUnits: Int32Array;
  declare readonly classBytes: Float64Array;
  declare readonly objectsPerSpan: Int32Array;
  declare readonly classOfUnits: Uint8Array;
  declare readonly largestClass: number;
  declare readonly unitsPerSpan: number;
  declare readonly inverseUnitsPerSpan: number;
  declare readonly units: number;
  /** Bytes covered by spans: `spans × spanSize`. */
  declare readonly spanRange: number;

  constructor(config: SharedHeapConfig, state: SharedArrayBuffer, heapBuddy: Buddy) {
    this.config = config;
    this.base = config.base;
    this.capacity = config.capacity;
    this.spanSize = config.spanSize;
    this.state = state;
    this.buddy = heapBuddy;
    this.header = new Int32Array(state, config.headerOffset, 16);
    this.figures = new Float64Array(state, config.figuresOffset, 16);
    const classCount = config.sizeClasses.length;
    this.classWords = new Uint32Array(state, config.classesOffset, classCount * CLASS_WORDS);
    this.spanClass = new Uint8Array(state, config.spanClassOffset, config.spans);
    this.spanWords = new Uint32Array(state, config.spanWordsOffset, config.spans * SPAN_WORDS);
    this.bitmap = new Uint32Array(state, config.bitmapOffset, config.units / 32);
    this.objectState = new Uint8Array(state, config.objectStateOffset, config.units);
    this.unitsPerSpan = config.unitsPerSpan;
    this.inverseUnitsPerSpan = 1 / config.unitsPerSpan;
    this.units = config.units;
    this.spanRange = config.spans * config.spanSize;
    this.classUnits = Int32Array.from(config.sizeClasses, (size) => size / UNIT_BYTES);
    this.classBytes = Float64Array.from(config.sizeClasses);
    this.objectsPerSpan = Int32Array.from(config.sizeClasses, (size) =>
      Math.floor(config.spanSize / size),
    );
    this.largestClass = config.sizeClasses[classCount - 1]!;
    const maxUnits = this.largestClass / UNIT_BYTES;
    this.classOfUnits = new Uint8Array(maxUnits + 1);
    for (let n = 0, c = 0; n <= maxUnits; n++) {
      while (this.classUnits[c]! < n) c++;
      this.classOfUnits[n] = c;
    }
  }

  /** @internal The class for a request, or −1 for a large block. Validates (throws) first. */
  classFor(size: number, alignment: number | undefined): number {
    const align = checkRequest(size, alignment, UNIT_BYTES);
    const need = Math.max(size, align);
    if (need > this.largestClass) return -1;
    let c = this.classOfUnits[Math.ceil(need / UNIT_BYTES)]!;
    if (align > UNIT_BYTES) {
      if (this.base % align !== 0) return -1;
      const n = this.classUnits.length;
      while (c < n && this.classBytes[c]! % align !== 0) c++;
      if (c === n) return -1;
    }
    return c;
  }

  /**
   * @internal Takes up to `want` objects of class `c` from the central lists (cutting new spans as
   * needed), writes their units to `out[at…]` and marks them `tag`. Returns how many it took.
   */
  takeObjects(c: number, want: number, out: Uint32Array, at: number, tag: number): number {
    const { classWords, spanWords, bitmap, objectState } = this;
    const cw = c * CLASS_WORDS;
    const wordsPerSpan = this.unitsPerSpan / 32;
    let got = 0;
    while (got < want) {
      let span = classWords[cw + CLASS_PARTIAL_HEAD]!;
      if (span === NIL) {
        span = this.newSpan(c);
        if (span === NIL) break;
      }
      const sw = span * SPAN_WORDS;
      let free = spanWords[sw + SPAN_FREE]!;
      const first = span * wordsPerSpan;
      const end = first + wordsPerSpan;
      for (let word = first; word < end && got < want; word++) {
        let bits = bitmap[word]!;
        if (bits === 0) continue;
        const unit0 = word * 32;
        while (bits !== 0 && got < want) {
          const low = bits & -bits;
          bits ^= low;
          const unit = unit0 + 31 - Math.clz32(low);
          objectState[unit] = tag;
          out[at + got] = unit;
          got++;
          free--;
        }
        bitmap[word] = bits;
      }
      spanWords[sw + SPAN_FREE] = free;
      if (free === 0) this.unlinkSpan(c, span);
    }
    classWords[cw + CLASS_CENTRAL_FREE]! -= got;
    const f = this.figures;
    f[FIGURE_HELD_BYTES]! += got * this.classBytes[c]!;
    f[FIGURE_HELD_COUNT]! += got;
    return got;
  }

  /** @internal Returns `count` objects of class `c` (units in `units[from…]`) to the centre. */
  giveObjects(c: number, units: Uint32Array, from: number, count: number): void {
    for (let i = 0; i < count; i++) this.giveObject(c, units[from + i]!);
  }

  /** @internal Returns one object of class `c` to the central lists. */
  giveObject(c: number, unit: number): void {
    this.objectState[unit] = OBJECT_FREE;
    const word = Math.floor(unit / 32);
    this.bitmap[word]! |= 1 << (unit - word * 32);
    const span = Math.floor(unit * this.inverseUnitsPerSpan);
    const sw = span * SPAN_WORDS;
    const free = this.spanWords[sw + SPAN_FREE]! + 1;
    this.spanWords[sw + SPAN_FREE] = free;
    const cw = c * CLASS_WORDS;
    this.classWords[cw + CLASS_CENTRAL_FREE]!++;
    if (free === 1) this.linkSpan(c, span);
    const f = this.figures;
    f[FIGURE_HELD_BYTES]! -= this.classBytes[c]!;
    f[FIGURE_HELD_COUNT]!--;
    if (free === this.objectsPerSpan[c]) this.releaseSpan(c, span);
  }

  /** @internal Usage from the shared figures; the caller holds the lock. */
  usageLocked(): Usage {
    const b = this.buddy.usage();
    const f = this.figures;
    const activeSpans = f[FIGURE_ACTIVE_SPANS]!;
    const largeBytes = b.allocatedBytes - activeSpans * this.spanSize;
    const largeCount = b.liveCount - activeSpans;
    let centralFreeBytes = 0;
    let centralFreeCount = 0;
    let largestSmall = 0;
    const cw = this.classWords;
    for (let c = 0; c < this.classUnits.length; c++) {
      const n = cw[c * CLASS_WORDS + CLASS_CENTRAL_FREE]!;
      if (n === 0) continue;
      centralFreeBytes += n * this.classBytes[c]!;
      centralFreeCount += n;
      largestSmall = this.classBytes[c]!;
    }
    const allocatedBytes = f[FIGURE_HELD_BYTES]! + largeBytes;
    const freeBytes = b.freeBytes + centralFreeBytes;
    return {
      capacity: this.capacity,
      allocatedBytes,
      freeBytes,
      overheadBytes: this.capacity - allocatedBytes - freeBytes,
      largestFreeBlock: Math.max(b.largestFreeBlock, largestSmall),
      liveCount: f[FIGURE_HELD_COUNT]! + largeCount,
      freeBlockCount: b.freeBlockCount + centralFreeCount,
    };
  }

  /**
   * @internal The error for a refused free of an address inside a small-object span (`ownTag`:
   * the calling cache's cached tag, or −1).
   */
  invalidSmallFree(
    address: number,
    offset: number,
    span: number,
    c: number,
    ownTag: number,
  ): InvalidFreeError {
    let reason: InvalidFreeReason = 'not-live';
    const local = offset - span * this.spanSize;
    const size = this.classBytes[c]!;
    const index = Math.floor(local / size);
    if (index < this.objectsPerSpan[c]!) {
      const start = span * this.unitsPerSpan + index * this.classUnits[c]!;
      const state = this.objectState[start]!;
      if (local === index * size) {
        reason =
          state === OBJECT_FREE || state === ownTag || state >= OBJECT_CACHED
            ? 'double-free'
            : 'not-live';
      } else if (state === OBJECT_LIVE) {
        reason = 'interior-pointer';
      }
    }
    return new InvalidFreeError(address, reason, 'shared heap');
  }

  /** @internal Offset of `address` from base; throws InvalidFreeError outside the heap. */
  checkAddress(address: number): number {
    const offset = typeof address === 'number' ? address - this.base : Number.NaN;
    if (!(offset >= 0 && offset < this.capacity)) {
      throw new InvalidFreeError(address, 'foreign-address', 'shared heap');
    }
    return offset;
  }

  private newSpan(c: number): number {
    const address = this.buddy.allocate(this.spanSize);
    if (address === null) return NIL;
    const span = (address - this.base) / this.spanSize;
    const count = this.objectsPerSpan[c]!;
    const step = this.classUnits[c]!;
    const first = span * this.unitsPerSpan;
    const bitmap = this.bitmap;
    const firstWord = first / 32;
    for (let i = 0, local = 0; i < count; i++, local += step) {
      // `local` < unitsPerSpan ≤ 2^26: 32-bit arithmetic is exact on it.
      bitmap[firstWord + (local >>> 5)]! |= 1 << (local & 31);
    }
    this.spanClass[span] = c + 1;
    this.spanWords[span * SPAN_WORDS + SPAN_FREE] = count;
    const cw = c * CLASS_WORDS;
    this.classWords[cw + CLASS_CENTRAL_FREE]! += count;
    this.classWords[cw + CLASS_SPANS]!++;
    this.linkSpan(c, span);
    const f = this.figures;
    f[FIGURE_ACTIVE_SPANS]!++;
    f[FIGURE_SPAN_TAIL_BYTES]! += this.spanSize - count * this.classBytes[c]!;
    return span;
  }

  private releaseSpan(c: number, span: number): void {
    this.unlinkSpan(c, span);
    const wordsPerSpan = this.unitsPerSpan / 32;
    this.bitmap.fill(0, span * wordsPerSpan, (span + 1) * wordsPerSpan);
    this.spanClass[span] = 0;
    this.spanWords.fill(0, span * SPAN_WORDS, (span + 1) * SPAN_WORDS);
    const count = this.objectsPerSpan[c]!;
    const cw = c * CLASS_WORDS;
    this.classWords[cw + CLASS_CENTRAL_FREE]! -= count;
    this.classWords[cw + CLASS_SPANS]!--;
    const f = this.figures;
    f[FIGURE_ACTIVE_SPANS]!--;
    f[FIGURE_SPAN_TAIL_BYTES]! -= this.spanSize - count * this.classBytes[c]!;
    this.buddy.free(this.base + span * this.spanSize);
  }

  private linkSpan(c: number, span: number): void {
    const { classWords, spanWords } = this;
    const cw = c * CLASS_WORDS;
    const head = classWords[cw + CLASS_PARTIAL_HEAD]!;
    const sw = span * SPAN_WORDS;
    spanWords[sw + SPAN_NEXT] = head;
    spanWords[sw + SPAN_PREV] = NIL;
    if (head !== NIL) spanWords[head * SPAN_WORDS + SPAN_PREV] = span;
    classWords[cw + CLASS_PARTIAL_HEAD] = span;
  }

  private unlinkSpan(c: number, span: number): void {
    const { classWords, spanWords } = this;
    const sw = span * SPAN_WORDS;
    const next = spanWords[sw + SPAN_NEXT]!;
    const prev = spanWords[sw + SPAN_PREV]!;
    if (prev === NIL) classWords[c * CLASS_WORDS + CLASS_PARTIAL_HEAD] = next;
    else spanWords[prev * SPAN_WORDS + SPAN_NEXT] = next;
    if (next !== NIL) spanWords[next * SPAN_WORDS + SPAN_PREV] = prev;
  }

  /** Empties every span table, bitmap and object state (spans are gone from the buddy heap). */
  protected clearCentral(): void {
    this.spanClass.fill(0);
    this.spanWords.fill(0);
    this.bitmap.fill(0);
    this.objectState.fill(0);
    for (let c = 0; c < this.classUnits.length; c++) {
      const cw = c * CLASS_WORDS;
      this.classWords[cw + CLASS_PARTIAL_HEAD] = NIL;
      this.classWords[cw + CLASS_CENTRAL_FREE] = 0;
      this.classWords[cw + CLASS_SPANS] = 0;
    }
    const f = this.figures;
    f[FIGURE_HELD_BYTES] = 0;
    f[FIGURE_HELD_COUNT] = 0;
    f[FIGURE_ACTIVE_SPANS] = 0;
    f[FIGURE_SPAN_TAIL_BYTES] = 0;
  }
}
