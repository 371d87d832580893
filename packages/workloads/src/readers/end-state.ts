/**
 * A PyTorch snapshot's end state (`segments`, each with its `blocks`) read into records as the
 * snapshot is read, and the state the recording began in, rebuilt from it and the trace:
 *
 * - segments at the start: those of the end state that no `segment_alloc` in the window created,
 *   plus those a `segment_free` in the window released without having created them; an expandable
 *   segment, with the bytes mapped at the end less those the window mapped (plus those it unmapped);
 * - blocks live at the start: those freed in the window without having been allocated in it, and
 *   those active at the end that the window never allocated (with their recorded block size).
 *
 * When a block falls in no segment (a window that lost its start to the ring buffer, say), the
 * trace carries no starting state, and the reason says why.
 */
import type { PDict } from '@allot/pickle';
import type { StartBlock, StartSegment, StartState } from '../trace';
import type { HeldBlock, PointerTrace } from './pointer-trace';
import { type Dict, fieldOf, isDict, itemsOf, numberOf, parseAddress } from './recorded-values';
import type { SegmentEvent } from './snapshot-figures';

/** A block of an end segment. */
export interface EndBlock {
  readonly address: number;
  readonly size: number;
  /** Bytes requested (the block's size when not recorded). */
  readonly requested: number;
  readonly active: boolean;
  /** Whether it is allocated (`active_allocated`): an active block may be a free in flight. */
  readonly allocated: boolean;
  /** The block's stack (its allocation's), 0 for none. */
  readonly stack: number;
}

/** A segment of the snapshot's end state, as recorded (checked when a device's trace is built). */
export interface EndSegment {
  readonly device: number;
  /** NaN when no address. */
  readonly address: number;
  /** `total_size`: NaN when no number. */
  readonly size: number;
  readonly pool: 'small' | 'large';
  /** The stream as recorded. */
  readonly stream: number;
  readonly expandable: boolean;
  /** The blocks that have an address and a size (those without are left out). */
  readonly blocks: readonly EndBlock[];
}

/** PyTorch's small-pool segment size (`kSmallBuffer`): a 2 MiB segment holds small blocks. */
const SMALL_SEGMENT = 2 ** 21;

/**
 * The record of `segment` (a parsed JSON object or a dict of the pickle machine), `stackOf` giving
 * the stack of a block's `frames`.
 */
export function readSegment(
  segment: Dict | PDict,
  stackOf: (frames: unknown) => number,
): EndSegment {
  const size = numberOf(fieldOf(segment, 'total_size'));
  const blocks: EndBlock[] = [];
  for (const block of itemsOf(fieldOf(segment, 'blocks')) ?? []) {
    if (!isDict(block)) continue;
    const address = parseAddress(fieldOf(block, 'address'));
    const blockSize = numberOf(fieldOf(block, 'size'));
    if (Number.isNaN(address) || !Number.isSafeInteger(blockSize)) continue;
    const requested = numberOf(fieldOf(block, 'requested_size'));
    const state = fieldOf(block, 'state');
    blocks.push({
      address,
      size: blockSize,
      requested: Number.isSafeInteger(requested) && requested > 0 ? requested : blockSize,
      active: typeof state === 'string' && state.startsWith('active'),
      allocated: state === 'active_allocated',
      stack: stackOf(fieldOf(block, 'frames')),
    });
  }
  const type = fieldOf(segment, 'segment_type');
  return {
    device: numberOf(fieldOf(segment, 'device')),
    address: parseAddress(fieldOf(segment, 'address')),
    size,
    pool: type === 'small' || type === 'large' ? type : size === SMALL_SEGMENT ? 'small' : 'large',
    stream: numberOf(fieldOf(segment, 'stream')) || 0,
    expandable: fieldOf(segment, 'is_expandable') === true,
    blocks,
  };
}

/** The segments of `device` with an address and a positive size, in address order. */
export function deviceSegments(segments: readonly EndSegment[], device: number): EndSegment[] {
  return segments
    .filter(
      (segment) =>
        segment.device === device &&
        !Number.isNaN(segment.address) &&
        Number.isSafeInteger(segment.size) &&
        segment.size > 0,
    )
    .sort((a, b) => a.address - b.address);
}

/**
 * The starting state (see the module comment), or the reason there is none. The blocks active at
 * the end that the window did not allocate go to `rows` (settled) as live throughout the window, so
 * they get leading allocations.
 */
export function startState(
  rows: PointerTrace,
  endSegments: readonly EndSegment[],
  segmentEvents: readonly SegmentEvent[],
): StartState | string {
  rows.addLiveAtEnd(heldBlocks(endSegments));
  if (endSegments.length === 0) return 'no segments in the snapshot';
  const created = new Set<number>();
  const released: SegmentEvent[] = [];
  for (const event of segmentEvents) {
    if (event.grow) created.add(event.address);
    else if (!created.has(event.address)) released.push(event);
  }
  // Bytes the window mapped into each expandable segment (net of unmaps), by segment.
  const mapped = new Map<EndSegment, number>();
  for (const event of segmentEvents) {
    const owner = containing(endSegments, event.address, Number.POSITIVE_INFINITY);
    if (owner === undefined || !owner.expandable) continue;
    mapped.set(owner, (mapped.get(owner) ?? 0) + (event.grow ? event.size : -event.size));
  }
  const segments: (Omit<StartSegment, 'blocks'> & { blocks: StartBlock[] })[] = [];
  for (const segment of endSegments) {
    const size = segment.expandable
      ? segment.size - (mapped.get(segment) ?? 0)
      : created.has(segment.address)
        ? 0
        : segment.size;
    if (size <= 0) continue;
    const { address, pool, expandable } = segment;
    const stream = rows.streamId(segment.stream);
    segments.push({ address, size, pool, stream, expandable, blocks: [] });
  }
  for (const event of released) {
    segments.push({
      address: event.address,
      size: event.size,
      pool: event.size === SMALL_SEGMENT ? 'small' : 'large',
      stream: 0,
      expandable: false,
      blocks: [],
    });
  }
  segments.sort((a, b) => a.address - b.address);
  const blocks = rows.preexistingBlocks();
  for (let id = 0; id < blocks.length; id++) {
    const block = blocks[id]!;
    const segment = containing(segments, block.address, 0);
    if (segment === undefined || block.address + block.size > segment.address + segment.size) {
      return `block 0x${block.address.toString(16)} live at the start lies in no segment`;
    }
    segment.blocks.push({
      id,
      offset: block.address - segment.address,
      requested: block.size,
      ...(block.held !== undefined ? { size: block.held } : {}),
    });
  }
  for (const segment of segments) {
    segment.blocks.sort((a, b) => a.offset - b.offset);
    let end = 0;
    for (const block of segment.blocks) {
      if (block.offset < end || block.offset % 512 !== 0) {
        return `blocks live at the start overlap in segment 0x${segment.address.toString(16)}`;
      }
      end = block.offset + (block.size ?? block.requested);
    }
  }
  return { events: blocks.length, segments, fidelity: 'exact' };
}

/** The active blocks of `segments`, in their order, each with its segment's stream. */
function* heldBlocks(segments: readonly EndSegment[]): Generator<HeldBlock> {
  for (const segment of segments) {
    for (const block of segment.blocks) {
      if (block.active) yield { ...block, stream: segment.stream };
    }
  }
}

/**
 * The segment of `sorted` (by address) whose range holds `address`, its size extended by `slack`
 * (expandable segments map past their size at the end), or undefined.
 */
function containing<T extends { address: number; size: number }>(
  sorted: readonly T[],
  address: number,
  slack: number,
): T | undefined {
  let lo = 0;
  let hi = sorted.length - 1;
  let found: T | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]!.address <= address) {
      found = sorted[mid];
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (found === undefined || address >= found.address + found.size + slack) return undefined;
  return found;
}
