/**
 * hostSource: a memory source over ArrayBuffer or SharedArrayBuffer regions.
 *
 * Each region gets an address of its own from a bump counter that starts at `baseAddress`
 * (default 2^32, so code that truncates addresses to 32 bits fails in tests, not in production).
 * Regions are separated by a guard gap and addresses are never reused, so a stale address can
 * never alias a newer region. With `growable`, each region reserves `maxRegionSize` bytes of
 * address space and grows in place through a resizable (or growable shared) buffer.
 */
import { InvalidArgumentError } from './errors';
import type { MemorySource, Region } from './memory-source';
import { alignUp, checkAlignment, checkNonNegativeInteger, checkSize } from './validate';

export interface HostSourceOptions {
  /** Back regions with `SharedArrayBuffer` so workers can share them. @defaultValue false */
  readonly shared?: boolean;
  /** Most bytes live at once across regions; `acquire` returns null past it. @defaultValue Infinity */
  readonly limit?: number;
  /** Address of the first region. @defaultValue 2^32 */
  readonly baseAddress?: number;
  /** Region sizes are rounded up to this (a power of two). @defaultValue 4096 */
  readonly granularity?: number;
  /** Regions can grow in place up to `maxRegionSize`. @defaultValue false */
  readonly growable?: boolean;
  /** Address space reserved per region when `growable`. @defaultValue 1 GiB */
  readonly maxRegionSize?: number;
}

/** A region of host memory: its bytes are `bytes`, at `address`. */
export interface HostRegion extends Region {
  readonly bytes: Uint8Array;
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
}

export interface HostSource extends MemorySource<HostRegion> {
  view(address: number, size: number): Uint8Array;
  /** Live regions in address order. */
  regions(): readonly HostRegion[];
}

const DEFAULT_BASE = 2 ** 32;
const GUARD_GAP = 64 * 1024;

interface MutableRegion {
  address: number;
  size: number;
  bytes: Uint8Array;
  buffer: ArrayBuffer | SharedArrayBuffer;
  reserved: number;
}

export function hostSource(options: HostSourceOptions = {}): HostSource {
  const shared = options.shared ?? false;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const granularity = options.granularity ?? 4096;
  const growable = options.growable ?? false;
  const maxRegionSize = options.maxRegionSize ?? 2 ** 30;
  const baseAddress = options.baseAddress ?? DEFAULT_BASE;
  checkAlignment(granularity, 'granularity');
  checkNonNegativeInteger(baseAddress, 'baseAddress');
  if (limit !== Number.POSITIVE_INFINITY) checkNonNegativeInteger(limit, 'limit');
  if (growable) checkSize(maxRegionSize, 'maxRegionSize');
  if (shared && growable && typeof SharedArrayBuffer.prototype.grow !== 'function') {
    throw new InvalidArgumentError('growable', true, 'a runtime with growable SharedArrayBuffer');
  }

  const live: MutableRegion[] = []; // ascending by address: addresses only ever increase
  let next = alignUp(baseAddress, granularity);
  let reserved = 0;

  function find(address: number): number {
    let lo = 0;
    let hi = live.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1; // indices, not addresses
      const r = live[mid]!;
      if (address < r.address) hi = mid - 1;
      else if (address >= r.address + r.size) lo = mid + 1;
      else return mid;
    }
    return -1;
  }

  function makeBuffer(size: number, max: number): ArrayBuffer | SharedArrayBuffer {
    if (shared) {
      return growable
        ? new SharedArrayBuffer(size, { maxByteLength: max })
        : new SharedArrayBuffer(size);
    }
    return growable ? new ArrayBuffer(size, { maxByteLength: max }) : new ArrayBuffer(size);
  }

  return {
    kind: 'host',
    granularity,
    hostAccessible: true,
    acquire(size: number): HostRegion | null {
      checkSize(size);
      const rounded = alignUp(size, granularity);
      if (growable && rounded > maxRegionSize) return null;
      if (rounded > limit - reserved) return null;
      const span = growable ? maxRegionSize : rounded;
      let buffer: ArrayBuffer | SharedArrayBuffer;
      try {
        buffer = makeBuffer(rounded, span);
      } catch (error) {
        if (error instanceof RangeError) return null; // the JS heap itself is exhausted
        throw error;
      }
      const region: MutableRegion = {
        address: next,
        size: rounded,
        buffer,
        bytes: new Uint8Array(buffer),
        reserved: span,
      };
      next = alignUp(next + span + GUARD_GAP, granularity);
      live.push(region);
      reserved += rounded;
      return region;
    },
    release(region: HostRegion): void {
      const index = find(region.address);
      if (index < 0 || live[index] !== region) {
        throw new InvalidArgumentError('region', region.address, 'a live region of this source');
      }
      live.splice(index, 1);
      reserved -= region.size;
    },
    ...(growable
      ? {
          grow(region: HostRegion, newSize: number): boolean {
            checkSize(newSize, 'newSize');
            const index = find(region.address);
            const r = live[index];
            if (index < 0 || r !== region) {
              throw new InvalidArgumentError(
                'region',
                region.address,
                'a live region of this source',
              );
            }
            const rounded = alignUp(newSize, granularity);
            if (rounded <= r.size) return true;
            if (rounded > r.reserved || rounded - r.size > limit - reserved) return false;
            try {
              if (r.buffer instanceof ArrayBuffer) r.buffer.resize(rounded);
              else r.buffer.grow(rounded);
            } catch (error) {
              if (error instanceof RangeError) return false;
              throw error;
            }
            reserved += rounded - r.size;
            r.size = rounded;
            r.bytes = new Uint8Array(r.buffer);
            return true;
          },
        }
      : {}),
    view(address: number, size: number): Uint8Array {
      const index = find(address);
      const r = live[index];
      if (r === undefined) {
        throw new InvalidArgumentError(
          'address',
          `0x${address.toString(16)}`,
          `an address inside a live region of this host source (${live.length} live)`,
        );
      }
      const offset = address - r.address;
      if (!Number.isSafeInteger(size) || size < 0 || offset + size > r.size) {
        throw new InvalidArgumentError(
          'size',
          size,
          `a range that ends inside its region (${r.size - offset} bytes remain after 0x${address.toString(16)})`,
        );
      }
      return r.bytes.subarray(offset, offset + size);
    },
    regions: () => live.slice(),
    reservedBytes: () => reserved,
  };
}
