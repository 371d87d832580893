/**
 * addressSource: a memory source that hands out addresses and no memory.
 *
 * A replay only needs the addresses a pool chooses, never the bytes behind them, so a pool over this
 * source can model a GPU with 80 GiB on a laptop: `acquire` bumps an address counter and counts the
 * bytes, `release` subtracts them. It records the peak of reserved bytes and how many regions were
 * acquired and released, which is how the lab reports a pool's `cudaMalloc` decisions.
 *
 * ```
 *  base (2^32)                                 addresses only ever increase, never reused
 *  │ region 0 │gap│ region 1 │gap│ growable region 2 ......(reserved span)...... │gap│ region 3
 * ```
 *
 * With `growable`, a region reserves up to `maxRegionSize` bytes of address space and `grow` extends
 * it in place (PyTorch's expandable segments). The reservation shrinks as the 2^53 addresses run low,
 * so thousands of regions fit; running out altogether is `null`, like any exhaustion. `view` is absent: the source is not host-accessible.
 */
import {
  alignUp,
  checkAlignment,
  checkNonNegativeInteger,
  checkSize,
  InvalidArgumentError,
  type MemorySource,
  type Region,
} from '@allot/core';

/** Options of {@link addressSource}. */
export interface AddressSourceOptions {
  /** Most bytes reserved at once; `acquire` and `grow` refuse past it. @defaultValue Infinity */
  readonly limit?: number;
  /** Address of the first region. @defaultValue 2^32 */
  readonly baseAddress?: number;
  /** Region sizes are rounded up to this (a power of two). @defaultValue 2 MiB (CUDA's granularity) */
  readonly granularity?: number;
  /** Regions can grow in place up to `maxRegionSize` (expandable segments). @defaultValue false */
  readonly growable?: boolean;
  /**
   * Address space reserved per growable region, at most: a region reserves less once the address
   * space runs low (never less than its own size). @defaultValue 1 TiB
   */
  readonly maxRegionSize?: number;
  /** What the addresses stand for, reported as `kind`. @defaultValue 'address-only' */
  readonly kind?: string;
  /**
   * Where a recorded allocator's driver put its segments, to follow (regions that do not grow only):
   * the n-th acquisition takes the n-th recorded address while the sizes agree and the range is free;
   * after the first that does not, addresses go on in the recorded direction.
   */
  readonly recorded?: RecordedAddresses;
}

/** A recording's segment addresses, in the order they were obtained (see {@link AddressSourceOptions.recorded}). */
export interface RecordedAddresses {
  readonly address: readonly number[];
  readonly size: readonly number[];
  /** The driver handed out later segments below earlier ones. */
  readonly downward: boolean;
}

/** A source of addresses without memory, with counters of its decisions. */
export interface AddressSource extends MemorySource<Region> {
  /** Largest {@link MemorySource.reservedBytes} seen so far. */
  peakReservedBytes(): number;
  /** Regions acquired so far (`cudaMalloc` calls that succeeded). */
  readonly acquireCount: number;
  /** Regions released so far. */
  readonly releaseCount: number;
  /** Successful in-place growths. */
  readonly growCount: number;
  /** Regions live now. */
  readonly liveRegionCount: number;
  /**
   * Bytes each successful `acquire`, `grow` or `remap` added, and each `unmap` took away (negative),
   * in order: the pool's `cudaMalloc` (or, for expandable segments, map and unmap) decisions, to set
   * beside a recording's.
   */
  decisions(): readonly number[];
  /** Forgets every region and every counter. */
  reset(): void;
}

const DEFAULT_BASE = 2 ** 32;
const GUARD_GAP = 2 ** 21;
/** Where downward addresses begin (below it, and above every upward one). */
const DOWNWARD_TOP = 2 ** 52;
/** A growable region reserves at most this fraction (1/n) of the address space still free. */
const SPAN_SHARE = 4096;

interface MutableRegion {
  readonly address: number;
  size: number;
  readonly span: number;
  /** Bytes of the region unmapped now (holes left by `unmap`, not counted as reserved). */
  unmapped: number;
}

/** Makes an {@link AddressSource}. */
export function addressSource(options: AddressSourceOptions = {}): AddressSource {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const granularity = options.granularity ?? 2 ** 21;
  const growable = options.growable ?? false;
  const maxRegionSize = options.maxRegionSize ?? 2 ** 40;
  const baseAddress = options.baseAddress ?? DEFAULT_BASE;
  checkAlignment(granularity, 'granularity');
  checkNonNegativeInteger(baseAddress, 'baseAddress');
  if (limit !== Number.POSITIVE_INFINITY) checkNonNegativeInteger(limit, 'limit');
  if (growable) checkSize(maxRegionSize, 'maxRegionSize');

  const live = new Map<number, MutableRegion>();
  let next = alignUp(baseAddress, granularity);
  const recorded = growable ? undefined : options.recorded;
  /** Recorded addresses followed so far; -1 once one could not be. */
  let followed = 0;
  /** Downward addresses: the next region ends below this. */
  let below = DOWNWARD_TOP;
  let reserved = 0;
  let peak = 0;
  let acquires = 0;
  let releases = 0;
  let grows = 0;
  const decisions: number[] = [];

  /**
   * Address space reserved for a growable region of `size` bytes: `maxRegionSize`, but never more
   * than 1/{@link SPAN_SHARE} of the addresses left (so thousands of streams, each with expandable
   * segments of its own, still fit in 2^53), and never less than `size` (a single block larger than
   * `maxRegionSize` still gets a region; it just cannot grow).
   */
  const growableSpan = (size: number): number => {
    const share = Math.floor((Number.MAX_SAFE_INTEGER - next) / SPAN_SHARE / granularity);
    return Math.max(size, Math.min(maxRegionSize, share * granularity));
  };

  /**
   * The recorded address of the next acquisition of `size` bytes, or null (and never again) when
   * the recording's next segment has another size or its range is taken; the counters then go on
   * past the recorded addresses used, in the recorded direction.
   */
  const overlapsLive = (address: number, size: number): boolean => {
    for (const r of live.values()) {
      if (address < r.address + r.span && r.address < address + size) return true;
    }
    return false;
  };

  const follow = (rec: RecordedAddresses, size: number): number | null => {
    if (followed < 0) return null;
    const address = rec.address[followed];
    const ok =
      address !== undefined &&
      rec.size[followed] === size &&
      Number.isSafeInteger(address) &&
      address % granularity === 0 &&
      address >= 0 &&
      !overlapsLive(address, size);
    if (ok) {
      followed++;
      if (rec.downward) below = Math.min(below, address);
      else next = Math.max(next, alignUp(address + size + GUARD_GAP, granularity));
      return address;
    }
    followed = -1;
    return null;
  };

  const liveRegion = (region: Region): MutableRegion => {
    const found = live.get(region.address);
    if (found === undefined || found !== region) {
      throw new InvalidArgumentError('region', region.address, 'a live region of this source');
    }
    return found;
  };

  const source: AddressSource = {
    kind: options.kind ?? 'address-only',
    granularity,
    hostAccessible: false,
    acquire(size: number): Region | null {
      checkSize(size);
      const rounded = alignUp(size, granularity);
      if (rounded > limit - reserved) return null;
      if (!Number.isSafeInteger(rounded)) return null;
      let region: MutableRegion;
      const at = recorded === undefined ? null : follow(recorded, rounded);
      if (at !== null) {
        region = { address: at, size: rounded, span: rounded, unmapped: 0 };
      } else if (recorded?.downward === true) {
        const address = Math.floor((below - GUARD_GAP - rounded) / granularity) * granularity;
        if (address < baseAddress) return null;
        region = { address, size: rounded, span: rounded, unmapped: 0 };
        below = address;
      } else {
        const span = growable ? growableSpan(rounded) : rounded;
        const end = alignUp(next + span + GUARD_GAP, granularity);
        // Exhausting 2^53 bytes of addresses is exhaustion like any other: null, not a throw.
        if (end > Number.MAX_SAFE_INTEGER) return null;
        region = { address: next, size: rounded, span, unmapped: 0 };
        next = end;
      }
      live.set(region.address, region);
      reserved += rounded;
      if (reserved > peak) peak = reserved;
      acquires++;
      decisions.push(rounded);
      return region;
    },
    release(region: Region): void {
      const r = liveRegion(region);
      live.delete(r.address);
      reserved -= r.size - r.unmapped;
      releases++;
    },
    reservedBytes: () => reserved,
    peakReservedBytes: () => peak,
    get acquireCount() {
      return acquires;
    },
    get releaseCount() {
      return releases;
    },
    get growCount() {
      return grows;
    },
    get liveRegionCount() {
      return live.size;
    },
    decisions: () => decisions,
    reset(): void {
      live.clear();
      next = alignUp(baseAddress, granularity);
      followed = 0;
      below = DOWNWARD_TOP;
      reserved = 0;
      peak = 0;
      acquires = 0;
      releases = 0;
      grows = 0;
      decisions.length = 0;
    },
  };
  if (growable) {
    source.grow = (region: Region, newSize: number): boolean => {
      checkSize(newSize, 'newSize');
      const r = liveRegion(region);
      const rounded = alignUp(newSize, granularity);
      if (rounded <= r.size) return true;
      if (rounded > r.span || rounded - r.size > limit - reserved) return false;
      reserved += rounded - r.size;
      if (reserved > peak) peak = reserved;
      decisions.push(rounded - r.size);
      r.size = rounded;
      grows++;
      return true;
    };
    const checkRange = (r: MutableRegion, offset: number, size: number): void => {
      checkNonNegativeInteger(offset, 'offset');
      checkSize(size);
      if (offset % granularity !== 0 || size % granularity !== 0 || offset + size > r.size) {
        throw new InvalidArgumentError('size', size, `whole pages inside the region's ${r.size} B`);
      }
    };
    source.unmap = (region: Region, offset: number, size: number): void => {
      const r = liveRegion(region);
      checkRange(r, offset, size);
      if (size > r.size - r.unmapped) {
        throw new InvalidArgumentError('size', size, 'at most the bytes mapped in the region');
      }
      r.unmapped += size;
      reserved -= size;
      decisions.push(-size);
    };
    source.remap = (region: Region, offset: number, size: number): boolean => {
      const r = liveRegion(region);
      checkRange(r, offset, size);
      if (size > r.unmapped) {
        throw new InvalidArgumentError('size', size, 'at most the bytes unmapped in the region');
      }
      if (size > limit - reserved) return false;
      r.unmapped -= size;
      reserved += size;
      if (reserved > peak) peak = reserved;
      decisions.push(size);
      return true;
    };
  }
  return source;
}
