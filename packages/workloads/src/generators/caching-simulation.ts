/**
 * A seeded stream of one device's allocator events, as PyTorch's caching allocator records them
 * (`alloc`, `free_requested`, `free_completed`, `segment_alloc`, `segment_free`), with the
 * segments and blocks it holds at the end: the two halves of a memory snapshot, consistent with
 * each other.
 *
 * The program: tensors of a fixed catalogue of sizes (as a model's layers repeat theirs) and a few
 * odd ones, allocated while the live bytes climb to a high mark and freed, most recent first, down
 * to a low mark, like the forward and backward passes of training steps.
 *
 * The allocator, a simple model of `CUDACachingAllocator` with its default settings:
 * - requests round up to 512 B; up to 1 MiB they come from the small pool, in 2 MiB segments;
 *   larger ones from the large pool, in 20 MiB segments below 10 MiB, else in segments rounded up
 *   to 2 MiB;
 * - the best fit in the pool (smallest block, then lowest address) is split when what is left is
 *   at least 512 B (small pool) or more than 1 MiB (large pool); a freed block merges with free
 *   neighbours in its segment;
 * - when a new segment would take the reserved bytes past a limit, every wholly free segment is
 *   released first (`segment_free`), as PyTorch does when `cudaMalloc` fails.
 *
 * Every event names the stack it was recorded with (see stack-lists.ts): an allocation's own, which
 * the `segment_free`s and `segment_alloc` it caused share, or a free's own, which its
 * `free_completed` shares.
 */
import { Random } from '../random';

/** Trace entry actions, as numbers; {@link ACTION_NAMES} are their names in the snapshot. */
export const Action = {
  alloc: 0,
  freeRequested: 1,
  freeCompleted: 2,
  segmentAlloc: 3,
  segmentFree: 4,
} as const;

/** The `action` of each {@link Action}. */
export const ACTION_NAMES = [
  'alloc',
  'free_requested',
  'free_completed',
  'segment_alloc',
  'segment_free',
] as const;

/** Receives the entries as they happen. */
export interface EntrySink {
  /**
   * One trace entry. `stack` keys the stack it was recorded with; `lastUse` says no later entry
   * uses that stack.
   */
  entry(
    action: number,
    addr: number,
    size: number,
    timeUs: number,
    stack: number,
    lastUse: boolean,
  ): void;
}

/** A block of a segment at the end. */
export interface SimulatedBlock {
  readonly address: number;
  readonly size: number;
  /** Bytes asked for by the allocation that last used the block (kept after it is freed). */
  readonly requested: number;
  readonly allocated: boolean;
  /** Index of the `alloc` entry of the allocation it holds (its stack's key). */
  readonly allocEntry: number;
}

/** A segment held at the end, its blocks in address order. */
export interface SimulatedSegment {
  readonly address: number;
  readonly size: number;
  readonly small: boolean;
  /** Index of the `alloc` entry that made it (its stack's key). */
  readonly allocEntry: number;
  readonly blocks: readonly SimulatedBlock[];
}

/** Requests round up to this (`kMinBlockSize`). */
const MIN_BLOCK = 512;
/** Largest request of the small pool (`kSmallSize`). */
const SMALL_SIZE = 1 << 20;
/** Segment of the small pool (`kSmallBuffer`). */
const SMALL_SEGMENT = 2 << 20;
/** Segment for large requests below {@link MIN_LARGE_ALLOC} (`kLargeBuffer`). */
const LARGE_SEGMENT = 20 << 20;
/** From this request size, segments are the request rounded up to {@link ROUND_LARGE}. */
const MIN_LARGE_ALLOC = 10 << 20;
const ROUND_LARGE = 2 << 20;

/** Live bytes climb to this, then fall to {@link LOW_MARK}. */
const HIGH_MARK = 3 * 2 ** 30;
const LOW_MARK = 2 ** 29;
/** Reserved bytes past which free segments are released before a new one is made. */
const RESERVE_LIMIT = HIGH_MARK;
/** Chance of an allocation (else a free) while climbing; falling, one minus it. */
const CLIMB_ALLOC = 0.7;
/** Sizes in the catalogue, by class: small (≤ 512 KiB), medium (≤ 8 MiB), large (≤ 128 MiB). */
const CATALOGUE = { small: 28, medium: 14, large: 6 } as const;
/** Chance that a request takes a small, then a medium size (else a large one). */
const SMALL_SHARE = 0.7;
const MEDIUM_SHARE = 0.24;
/** Chance of a size outside the catalogue. */
const ODD_SHARE = 0.05;
/** Chance that a free takes any live block; otherwise one of the most recent. */
const RANDOM_FREE = 0.15;
/** Mean distance from the most recent block of a recent free. */
const RECENT_SPREAD = 4;
/** Where this device's segments start, and the gap between devices' address ranges. */
const FIRST_ADDRESS = 0x7f00_0000_0000;
const DEVICE_SPAN = 2 ** 40;
/** `time_us` of the first entry. */
const FIRST_TIME_US = 1_795_400_000_000_000;

class Block {
  constructor(
    public address: number,
    public size: number,
    /** Bytes asked for by the allocation that last used the block. */
    public requested: number,
    public segment: Segment,
    public prev: Block | null,
    public next: Block | null,
  ) {}
  allocated = false;
  allocEntry = -1;
}

interface Segment {
  address: number;
  size: number;
  small: boolean;
  allocEntry: number;
  head: Block;
}

/** Removes `array[index]`, keeping the order (`splice` allocates an array per call). */
function removeAt<T>(array: T[], index: number): void {
  const last = array.length - 1;
  for (let i = index; i < last; i++) array[i] = array[i + 1]!;
  array.pop();
}

/** Inserts `item` at `index`, keeping the order. */
function insertAt<T>(array: T[], index: number, item: T): void {
  array.push(item);
  for (let i = array.length - 1; i > index; i--) array[i] = array[i - 1]!;
  array[index] = item;
}

/** Free blocks of one pool, ordered by size, then address. */
class FreeBlocks {
  readonly blocks: Block[] = [];

  /** The smallest free block of at least `size` bytes (lowest address among equals), or null. */
  find(size: number): Block | null {
    return this.blocks[this.lowerBound(size, 0)] ?? null;
  }

  add(block: Block): void {
    insertAt(this.blocks, this.lowerBound(block.size, block.address), block);
  }

  remove(block: Block): void {
    removeAt(this.blocks, this.lowerBound(block.size, block.address));
  }

  private lowerBound(size: number, address: number): number {
    const blocks = this.blocks;
    let low = 0;
    let high = blocks.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const block = blocks[mid]!;
      if (block.size < size || (block.size === size && block.address < address)) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** `round_size`: at least 512 B, a multiple of 512 B. */
function roundSize(size: number): number {
  return size < MIN_BLOCK ? MIN_BLOCK : Math.ceil(size / MIN_BLOCK) * MIN_BLOCK;
}

/** `get_allocation_size`: the segment a request of `size` (rounded) bytes gets. */
function segmentSize(size: number): number {
  if (size <= SMALL_SIZE) return SMALL_SEGMENT;
  if (size < MIN_LARGE_ALLOC) return LARGE_SEGMENT;
  return Math.ceil(size / ROUND_LARGE) * ROUND_LARGE;
}

/** One device's allocator and program; see the file comment. */
export class CachingSimulation {
  /** Entries recorded so far. */
  entries = 0;
  private readonly random: Random;
  private readonly catalogue: number[];
  private readonly smallFree = new FreeBlocks();
  private readonly largeFree = new FreeBlocks();
  private readonly segments = new Map<number, Segment>();
  private readonly live: Block[] = [];
  private liveBytes = 0;
  private reserved = 0;
  private climbing = true;
  private nextAddress: number;
  private timeUs = FIRST_TIME_US;

  constructor(seed: number, device: number) {
    this.random = new Random(seed);
    this.nextAddress = FIRST_ADDRESS - device * DEVICE_SPAN;
    const random = this.random;
    const sizes = (count: number, low: number, high: number) =>
      Array.from({ length: count }, () => 2 * random.logUniform(low, high));
    this.catalogue = [
      ...sizes(CATALOGUE.small, 1, 256 << 10),
      ...sizes(CATALOGUE.medium, 256 << 10, 4 << 20),
      ...sizes(CATALOGUE.large, 4 << 20, 64 << 20),
    ];
  }

  /** One allocation or one free, with the entries it records. */
  step(sink: EntrySink): void {
    if (this.liveBytes >= HIGH_MARK) this.climbing = false;
    else if (this.liveBytes <= LOW_MARK) this.climbing = true;
    const allocate = this.random.next() < (this.climbing ? CLIMB_ALLOC : 1 - CLIMB_ALLOC);
    if (allocate || this.live.length === 0) this.allocate(sink);
    else this.free(sink);
  }

  /** The segments held now, by address, with their blocks. */
  heldSegments(): SimulatedSegment[] {
    return [...this.segments.values()]
      .sort((a, b) => a.address - b.address)
      .map((segment) => {
        const blocks: SimulatedBlock[] = [];
        for (let b: Block | null = segment.head; b !== null; b = b.next) {
          const { address, size, requested, allocated, allocEntry } = b;
          blocks.push({ address, size, requested, allocated, allocEntry });
        }
        const { address, size, small, allocEntry } = segment;
        return { address, size, small, allocEntry, blocks };
      });
  }

  private drawSize(): number {
    const random = this.random;
    if (random.next() < ODD_SHARE) return 2 * random.logUniform(1, 512 << 10);
    const u = random.next();
    const { small, medium, large } = CATALOGUE;
    if (u < SMALL_SHARE) return this.catalogue[random.index(small)]!;
    if (u < SMALL_SHARE + MEDIUM_SHARE) return this.catalogue[small + random.index(medium)]!;
    return this.catalogue[small + medium + random.index(large)]!;
  }

  private allocate(sink: EntrySink): void {
    const requested = this.drawSize();
    const size = roundSize(requested);
    const small = size <= SMALL_SIZE;
    const pool = small ? this.smallFree : this.largeFree;
    let block = pool.find(size);
    let released: Segment[] = [];
    let created: Segment | null = null;
    if (block === null) {
      const bytes = segmentSize(size);
      if (this.reserved + bytes > RESERVE_LIMIT) released = this.wholeFreeSegments();
      for (const segment of released) this.release(segment);
      created = this.createSegment(bytes, small);
      block = created.head;
    }
    // The entries this allocation records share its stack, keyed by the index of its `alloc`.
    const allocEntry = this.entries + released.length + (created === null ? 0 : 1);
    for (const segment of released) {
      this.record(sink, Action.segmentFree, segment.address, segment.size, allocEntry, false);
    }
    if (created !== null) {
      created.allocEntry = allocEntry;
      this.record(sink, Action.segmentAlloc, created.address, created.size, allocEntry, false);
    } else {
      pool.remove(block);
    }
    this.split(block, size, pool);
    block.allocated = true;
    block.requested = requested;
    block.allocEntry = allocEntry;
    this.live.push(block);
    this.liveBytes += block.size;
    this.record(sink, Action.alloc, block.address, requested, allocEntry, true);
  }

  private free(sink: EntrySink): void {
    const random = this.random;
    const live = this.live;
    let block: Block;
    if (random.next() < RANDOM_FREE) {
      // Any live block; the last one takes its place (the order of the old ones matters little).
      const index = random.index(live.length);
      block = live[index]!;
      live[index] = live[live.length - 1]!;
      live.pop();
    } else {
      const recent = Math.floor(-Math.log(1 - random.next()) * RECENT_SPREAD);
      const index = Math.max(0, live.length - 1 - recent);
      block = live[index]!;
      removeAt(live, index);
    }
    this.liveBytes -= block.size;
    const key = this.entries;
    this.record(sink, Action.freeRequested, block.address, block.requested, key, false);
    this.record(sink, Action.freeCompleted, block.address, block.requested, key, true);
    block.allocated = false;
    const pool = block.segment.small ? this.smallFree : this.largeFree;
    let merged = block;
    const { prev, next } = block;
    if (prev !== null && !prev.allocated) {
      pool.remove(prev);
      prev.size += merged.size;
      prev.next = merged.next;
      if (merged.next !== null) merged.next.prev = prev;
      // The freed block absorbs its neighbours and keeps its own requested size.
      prev.requested = merged.requested;
      merged = prev;
    }
    if (next !== null && !next.allocated) {
      pool.remove(next);
      merged.size += next.size;
      merged.next = next.next;
      if (next.next !== null) next.next.prev = merged;
    }
    pool.add(merged);
  }

  /** Splits `size` bytes off the front of `block` when the rest is worth keeping. */
  private split(block: Block, size: number, pool: FreeBlocks): void {
    const rest = block.size - size;
    const worth = block.segment.small ? rest >= MIN_BLOCK : rest > SMALL_SIZE;
    if (!worth) return;
    // PyTorch's remainder is the old block object moved up: it keeps the old requested size.
    const remainder = new Block(
      block.address + size,
      rest,
      block.requested,
      block.segment,
      block,
      block.next,
    );
    if (block.next !== null) block.next.prev = remainder;
    block.next = remainder;
    block.size = size;
    pool.add(remainder);
  }

  private createSegment(bytes: number, small: boolean): Segment {
    const address = this.nextAddress;
    // cudaMalloc leaves gaps between segments now and then.
    this.nextAddress += bytes + (this.random.next() < 0.25 ? ROUND_LARGE : 0);
    const segment = { address, size: bytes, small, allocEntry: -1 } as Segment;
    segment.head = new Block(address, bytes, 0, segment, null, null);
    this.segments.set(address, segment);
    this.reserved += bytes;
    return segment;
  }

  /** Every segment that is one free block, large pool first, each pool by size then address. */
  private wholeFreeSegments(): Segment[] {
    const whole = (pool: FreeBlocks) =>
      pool.blocks.filter((b) => b.prev === null && b.next === null).map((b) => b.segment);
    return [...whole(this.largeFree), ...whole(this.smallFree)];
  }

  private release(segment: Segment): void {
    (segment.small ? this.smallFree : this.largeFree).remove(segment.head);
    this.segments.delete(segment.address);
    this.reserved -= segment.size;
  }

  private record(
    sink: EntrySink,
    action: number,
    addr: number,
    size: number,
    stack: number,
    lastUse: boolean,
  ): void {
    this.timeUs += 1 + this.random.index(30);
    this.entries++;
    sink.entry(action, addr, size, this.timeUs, stack, lastUse);
  }
}
