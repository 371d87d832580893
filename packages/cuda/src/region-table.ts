/** Live regions of a source, by address: release and view check against it. */
import {
  alignUp,
  checkSize,
  InvalidArgumentError,
  OutOfMemoryError,
  type Region,
} from '@allot/core';

export class RegionTable<R extends Region> {
  private readonly live = new Map<number, R>();
  private bytes = 0;

  get reservedBytes(): number {
    return this.bytes;
  }

  get size(): number {
    return this.live.size;
  }

  add(region: R): R {
    this.live.set(region.address, region);
    this.bytes += region.size;
    return region;
  }

  /** Removes `region`; throws when it is not live here. */
  remove(region: R): void {
    const found = this.live.get(region?.address);
    if (found === undefined || found !== region) {
      throw new InvalidArgumentError('region', region?.address, 'a live region of this source');
    }
    this.live.delete(region.address);
    this.bytes -= region.size;
  }

  /** Records that a live region grew by `bytes`. */
  grew(bytes: number): void {
    this.bytes += bytes;
  }

  get(address: number): R | undefined {
    return this.live.get(address);
  }

  /** The live region that holds `[address, address + size)`. */
  containing(address: number, size: number): R {
    for (const r of this.live.values()) {
      if (address >= r.address && address < r.address + r.size) {
        if (!Number.isSafeInteger(size) || size < 0 || address + size > r.address + r.size) {
          throw new InvalidArgumentError(
            'size',
            size,
            `a range that ends inside its region (${r.address + r.size - address} bytes remain after 0x${address.toString(16)})`,
          );
        }
        return r;
      }
    }
    throw new InvalidArgumentError(
      'address',
      `0x${address.toString(16)}`,
      'an address inside a live region of this source',
    );
  }

  /** Bytes `[address, address + size)` of a host-visible region, checked against the table. */
  view(
    this: RegionTable<R & { readonly bytes: Uint8Array }>,
    address: number,
    size: number,
  ): Uint8Array {
    const r = this.containing(address, size);
    return r.bytes.subarray(address - r.address, address - r.address + size);
  }

  values(): R[] {
    return [...this.live.values()].sort((a, b) => a.address - b.address);
  }
}

/** Checks `size` and rounds it to `granularity`; `null` when over `limit` with `reserved` held. */
export function roundRequest(
  size: number,
  granularity: number,
  reserved: number,
  limit: number,
): number | null {
  checkSize(size);
  const rounded = alignUp(size, granularity);
  return rounded > limit - reserved ? null : rounded;
}

export function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return Number.POSITIVE_INFINITY;
  checkSize(limit, 'limit');
  return limit;
}

/** How a source obtains and returns one region natively. */
export interface RegionBackend<R extends Region> {
  /** Region sizes are rounded up to this. */
  readonly granularity: number;
  /** Most bytes held at once (Infinity for none). */
  readonly limit: number;
  readonly table: RegionTable<R>;
  /** Obtains `rounded` bytes natively; throws `OutOfMemoryError` when the device is full. */
  readonly allocate: (rounded: number) => R;
  /** Returns a region natively. */
  readonly free: (region: R) => void;
}

/** The lifecycle every CUDA source shares: round, honour the limit, map out-of-memory to null. */
export interface RegionLifecycle<R extends Region> {
  acquire(size: number): R | null;
  acquireOrThrow(size: number): R;
  release(region: R): void;
  reservedBytes(): number;
  regions(): R[];
  /** Frees every live region (for `dispose`). */
  releaseAll(): void;
}

export function regionLifecycle<R extends Region>(backend: RegionBackend<R>): RegionLifecycle<R> {
  const { granularity, limit, table, allocate, free } = backend;
  const round = (size: number) => roundRequest(size, granularity, table.reservedBytes, limit);
  return {
    acquire(size: number): R | null {
      const rounded = round(size);
      if (rounded === null) return null;
      try {
        return table.add(allocate(rounded));
      } catch (error) {
        if (OutOfMemoryError.isInstance(error)) return null;
        throw error;
      }
    },
    acquireOrThrow(size: number): R {
      const rounded = round(size);
      if (rounded === null) {
        throw new OutOfMemoryError({
          requested: size,
          alignment: granularity,
          capacity: limit,
          freeBytes: limit - table.reservedBytes,
          largestFreeBlock: limit - table.reservedBytes,
          detail: `The source's limit of ${limit} bytes would be exceeded.`,
        });
      }
      return table.add(allocate(rounded));
    },
    release(region: R): void {
      table.remove(region);
      try {
        free(region);
      } catch (error) {
        table.add(region);
        throw error;
      }
    },
    reservedBytes: () => table.reservedBytes,
    regions: () => table.values(),
    releaseAll(): void {
      for (const region of table.values()) {
        table.remove(region);
        free(region);
      }
    },
  };
}
