/**
 * The state of a buddy heap as one view sees it: typed arrays over the (Shared)ArrayBuffer, the
 * free list of each order (push, pop, remove), the tags that say where blocks start, and the
 * classification of a refused free. `buddy.ts` is the policy on top (split, merge, deferred merging;
 * its module comment describes the design).
 */
import { InvalidFreeError, type InvalidFreeReason } from '@allot/core';
import { INV_POW, POW } from './block-index';
import { type BuddyConfig, powerOfTwoDividing } from './config';
import {
  CELL_NEXT,
  CELL_PREV,
  CELL_TAG,
  CELL_WORDS,
  CELLS_OFFSET,
  COUNTS_OFFSET,
  FIGURE_ALLOCATED,
  FIGURE_BASE,
  FIGURE_CAPACITY,
  FIGURE_LIVE_COUNT,
  FIGURE_REQUESTED,
  FIGURE_VERSION,
  HEADS_OFFSET,
  MAX_ORDERS,
  NIL,
  STATE_MAGIC,
  STATE_VERSION,
  TAG_FREE,
  TAG_LIVE,
  TAG_ORDER_MASK,
  WORD_DEFERRED,
  WORD_MAGIC,
  WORD_MAX_ORDER,
  WORD_MIN_ORDER,
  WORD_NON_EMPTY,
  WORD_UNITS,
  WORD_VERSION,
} from './state-layout';

/** The typed-array state and free lists of a buddy heap: what `BuddyHeap` splits and merges. */
export abstract class BuddyLists {
  // `declare`d fields are assigned once in the constructor, which keeps number fields unboxed.
  declare readonly base: number;
  declare readonly capacity: number;
  declare readonly minBlockSize: number;
  declare readonly maxBlockSize: number;
  declare readonly alignment: number;
  declare readonly state: ArrayBuffer | SharedArrayBuffer;
  /** Largest power of two dividing `base`: the most absolute alignment a block can promise. */
  declare protected readonly baseAlignment: number;
  declare protected readonly inverseUnit: number;
  /** Bytes of a block of each order (`minBlockSize × 2^k`). */
  declare protected readonly blockBytes: Float64Array;
  declare protected readonly units: number;
  declare protected readonly maxOrder: number;
  declare protected readonly words: Uint32Array;
  declare protected readonly figures: Float64Array;
  declare protected readonly heads: Uint32Array;
  declare protected readonly counts: Uint32Array;
  /** {@link CELL_WORDS} words per unit: tag, next/requested-low, prev/requested-high. */
  declare protected readonly cells: Uint32Array;
  /** First unit and order of each maximal block, in address order. */
  declare protected readonly rootStarts: readonly number[];
  declare protected readonly rootOrders: readonly number[];
  /** What this view last worked out about deferring a block: its index, the version, the answer. */
  declare protected deferIndex: number;
  declare protected deferVersion: number;
  declare protected deferAllowed: boolean;

  constructor(config: BuddyConfig, state: ArrayBuffer | SharedArrayBuffer) {
    this.base = config.base;
    this.capacity = config.capacity;
    this.minBlockSize = config.minBlockSize;
    this.maxBlockSize = config.maxBlockSize;
    this.baseAlignment = powerOfTwoDividing(config.base);
    this.alignment = Math.min(config.minBlockSize, this.baseAlignment);
    this.inverseUnit = 1 / config.minBlockSize;
    this.blockBytes = POW.map((power) => power * config.minBlockSize);
    this.units = config.units;
    this.maxOrder = config.maxOrder;
    this.state = state;
    this.words = new Uint32Array(state, 0, HEADS_OFFSET / 4);
    this.figures = new Float64Array(state, 0, HEADS_OFFSET / 8);
    this.heads = new Uint32Array(state, HEADS_OFFSET, MAX_ORDERS);
    this.counts = new Uint32Array(state, COUNTS_OFFSET, MAX_ORDERS);
    this.cells = new Uint32Array(state, CELLS_OFFSET, config.units * CELL_WORDS);
    const starts: number[] = [];
    const orders: number[] = [];
    let at = 0;
    for (let k = config.maxOrder; k >= 0; k--) {
      while (at + POW[k]! <= config.units) {
        starts.push(at);
        orders.push(k);
        at += POW[k]!;
        if (k < config.maxOrder) break; // below the top, each order appears at most once
      }
    }
    this.rootStarts = starts;
    this.rootOrders = orders;
    this.deferIndex = -1;
    this.deferVersion = -1;
    this.deferAllowed = false;
  }

  /** Writes a fresh heap into the state buffer (`zeroed`: the buffer is known to be all zeros). */
  initialise(config: BuddyConfig, zeroed: boolean): void {
    const { words, figures } = this;
    words[WORD_MAGIC] = STATE_MAGIC;
    words[WORD_VERSION] = STATE_VERSION;
    words[WORD_MIN_ORDER] = config.minOrder;
    words[WORD_MAX_ORDER] = config.maxOrder;
    words[WORD_UNITS] = config.units;
    figures[FIGURE_BASE] = config.base;
    figures[FIGURE_CAPACITY] = config.capacity;
    this.clear(zeroed);
  }

  /** Back to the initial heap; `zeroed` skips clearing cells that are known to be zero already. */
  protected clear(zeroed: boolean): void {
    const { words, figures, cells } = this;
    // A new buffer is zeroed by the runtime: not touching it keeps its pages unmapped until used.
    if (!zeroed) cells.fill(0);
    words[WORD_DEFERRED] = 0;
    figures[FIGURE_VERSION]!++;
    this.heads.fill(NIL);
    this.counts.fill(0);
    words[WORD_NON_EMPTY] = 0;
    // Push in reverse so each list starts with its lowest address.
    for (let r = this.rootStarts.length - 1; r >= 0; r--) {
      const start = this.rootStarts[r]!;
      const order = this.rootOrders[r]!;
      this.push(start, order);
      cells[start * CELL_WORDS + CELL_TAG] = TAG_FREE | order;
    }
    figures[FIGURE_ALLOCATED] = 0;
    figures[FIGURE_REQUESTED] = 0;
    figures[FIGURE_LIVE_COUNT] = 0;
  }

  /** Unit index of `address`, or −1 when it is not the start of a unit inside the range. */
  protected indexOf(address: number): number {
    if (typeof address !== 'number') return -1;
    const index = (address - this.base) * this.inverseUnit;
    return index >= 0 && index < this.units && index === Math.floor(index) ? index : -1;
  }

  /** Tag of the live block starting at `address`, or −1. */
  protected liveTag(address: number): number {
    const index = this.indexOf(address);
    if (index < 0) return -1;
    const tag = this.cells[index * CELL_WORDS + CELL_TAG]!;
    return tag >= TAG_LIVE ? tag : -1;
  }

  protected push(index: number, order: number): void {
    const cells = this.cells;
    const head = this.heads[order]!;
    const cell = index * CELL_WORDS;
    cells[cell + CELL_NEXT] = head;
    cells[cell + CELL_PREV] = NIL;
    if (head === NIL) this.words[WORD_NON_EMPTY]! |= 1 << order;
    else cells[head * CELL_WORDS + CELL_PREV] = index;
    this.heads[order] = index;
    this.counts[order]!++;
  }

  protected pop(order: number): number {
    const cells = this.cells;
    const index = this.heads[order]!;
    const next = cells[index * CELL_WORDS + CELL_NEXT]!;
    this.heads[order] = next;
    if (next === NIL) this.words[WORD_NON_EMPTY]! &= ~(1 << order);
    else cells[next * CELL_WORDS + CELL_PREV] = NIL;
    this.counts[order]!--;
    return index;
  }

  protected remove(index: number, order: number): void {
    const cells = this.cells;
    const cell = index * CELL_WORDS;
    const next = cells[cell + CELL_NEXT]!;
    const prev = cells[cell + CELL_PREV]!;
    if (prev === NIL) {
      this.heads[order] = next;
      if (next === NIL) this.words[WORD_NON_EMPTY]! &= ~(1 << order);
    } else {
      cells[prev * CELL_WORDS + CELL_NEXT] = next;
    }
    if (next !== NIL) cells[next * CELL_WORDS + CELL_PREV] = prev;
    this.counts[order]!--;
  }

  /** The error for a refused free, with the reason worked out (slow path). */
  protected invalidFree(address: number): InvalidFreeError {
    return new InvalidFreeError(address, this.classify(address), 'buddy');
  }

  protected classify(address: number): InvalidFreeReason {
    if (typeof address !== 'number' || !Number.isFinite(address)) return 'foreign-address';
    const offset = address - this.base;
    if (!(offset >= 0 && offset < this.units * this.minBlockSize)) return 'foreign-address';
    const cells = this.cells;
    const unit = Math.floor(offset * this.inverseUnit);
    const exact = unit * this.minBlockSize === offset;
    if (exact && (cells[unit * CELL_WORDS + CELL_TAG]! & TAG_FREE) !== 0) return 'double-free';
    // Find the block containing `unit`: the nearest head at or below it whose extent covers it.
    for (let k = 0; k <= this.maxOrder; k++) {
      const head = Math.floor(unit * INV_POW[k]!) * POW[k]!;
      const tag = cells[head * CELL_WORDS + CELL_TAG]!;
      if (tag === 0) continue;
      if (head + POW[tag & TAG_ORDER_MASK]! <= unit) continue;
      return tag >= TAG_LIVE ? 'interior-pointer' : 'not-live';
    }
    return 'not-live';
  }
}
