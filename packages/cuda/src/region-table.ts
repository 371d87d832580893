/** Live regions of a source, by address: release and view check against it. */
import { alignUp, checkSize, InvalidArgumentError, type Region } from '@allot/core';

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
