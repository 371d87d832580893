/**
 * expandableSource: device memory that grows in place, through the driver's virtual-memory API.
 * This is what makes the caching pool's `expandable_segments:True` real on a GPU: a segment reserves
 * a large range of device addresses once and maps physical memory into it as it grows, so its
 * address never changes and the pool never has to copy or fragment across segments.
 *
 * ```
 *  acquire(size) ─► cuMemAddressReserve(maxRegionSize)  ─► address space only
 *                   cuMemCreate(size) + cuMemMap + cuMemSetAccess at offset 0
 *  grow(r, n)    ─► cuMemCreate(n - r.size) + cuMemMap + cuMemSetAccess at offset r.size
 *  release(r)    ─► cuMemUnmap, cuMemRelease (every piece), cuMemAddressFree
 *  ┌──────────────────────── reserved: maxRegionSize ────────────────────────┐
 *  │ piece 0 (mapped) │ piece 1 (mapped) │ ......... not mapped ............ │
 *  └──────────────────────────────────────────────────────────────────────────┘
 * ```
 *
 * Sizes are multiples of the device's recommended granularity (2 MiB on current GPUs).
 */
import { alignUp, checkSize, OutOfMemoryError, UnsupportedError } from '@allot/core';
import { type CudaDeviceMemorySource, type CudaRegion, openDevice } from './device-source';
import { VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED } from './ffi/driver';
import { openDriver } from './ffi/open';
import type { DeviceOptions } from './options';
import { checkLimit, RegionTable } from './region-table';
import { eventMembers, streamEventHooks } from './streams';

/** Physical memory mapped into a segment: one `cuMemCreate` handle. */
interface Piece {
  readonly offset: number;
  readonly size: number;
  readonly handle: number;
}

/** A region that can grow in place. */
export interface ExpandableRegion extends CudaRegion {
  /** Bytes of address space reserved for it: the most it can grow to. */
  readonly reserved: number;
}

interface MutableRegion {
  address: number;
  size: number;
  device: number;
  reserved: number;
  pieces: Piece[];
}

/** Options of {@link expandableSource}. */
export interface ExpandableSourceOptions extends DeviceOptions {
  /**
   * Address space reserved per region (the most one region can grow to), rounded up to the
   * granularity. Reserving costs no memory.
   * @defaultValue the device's total memory, or `limit` when smaller
   */
  readonly maxRegionSize?: number;
  /** Most bytes mapped at once across regions; `acquire` and `grow` refuse past it. @defaultValue Infinity */
  readonly limit?: number;
}

/** A source of device memory that grows in place. */
export interface ExpandableSource extends CudaDeviceMemorySource<ExpandableRegion> {
  readonly kind: 'cuda-expandable';
  grow(region: ExpandableRegion, newSize: number): boolean;
}

/**
 * A memory source over the driver's virtual-memory management API.
 * @throws CudaUnavailableError when the runtime or the driver cannot be used; UnsupportedError when
 * the device has no virtual-memory management.
 */
export function expandableSource(options: ExpandableSourceOptions = {}): ExpandableSource {
  const { runtime, device, total } = openDevice(options);
  const driver = openDriver(options);
  if (driver.attribute(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device) === 0) {
    throw new UnsupportedError(
      `Device ${device} does not support virtual memory management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0).`,
    );
  }
  const granularity = driver.granularity(device);
  if (options.maxRegionSize !== undefined) checkSize(options.maxRegionSize, 'maxRegionSize');
  const limit = checkLimit(options.limit);
  const maxRegionSize = alignUp(options.maxRegionSize ?? Math.min(total, limit), granularity);
  const table = new RegionTable<MutableRegion>();
  const hooks = streamEventHooks(runtime, device);

  /** Maps `size` bytes at `offset` of `region`; null when the device is out of memory. */
  function mapPiece(region: MutableRegion, offset: number, size: number): Piece | null {
    let handle: number;
    try {
      handle = driver.create(size, device);
    } catch (error) {
      if (OutOfMemoryError.isInstance(error)) return null;
      throw error;
    }
    try {
      driver.map(region.address + offset, size, handle);
    } catch (error) {
      driver.release(handle);
      throw error;
    }
    try {
      driver.setAccess(region.address + offset, size, device);
    } catch (error) {
      driver.unmap(region.address + offset, size);
      driver.release(handle);
      throw error;
    }
    return { offset, size, handle };
  }

  /** Unmaps after the device has finished with the memory (cuMemUnmap does not wait, unlike cudaFree). */
  function unmapPieces(region: MutableRegion): void {
    runtime.useDevice(device);
    runtime.deviceSynchronize();
    for (const piece of region.pieces) {
      driver.unmap(region.address + piece.offset, piece.size);
      driver.release(piece.handle);
    }
    region.pieces = [];
  }

  function acquire(size: number): ExpandableRegion | null {
    checkSize(size);
    const rounded = alignUp(size, granularity);
    if (rounded > maxRegionSize || rounded > limit - table.reservedBytes) return null;
    runtime.useDevice(device);
    let address: number;
    try {
      address = driver.addressReserve(maxRegionSize, granularity);
    } catch (error) {
      if (OutOfMemoryError.isInstance(error)) return null; // no address space left
      throw error;
    }
    const region: MutableRegion = { address, size: 0, device, reserved: maxRegionSize, pieces: [] };
    const piece = mapPiece(region, 0, rounded);
    if (piece === null) {
      driver.addressFree(address, maxRegionSize);
      return null;
    }
    region.pieces.push(piece);
    region.size = rounded;
    return table.add(region);
  }

  return {
    kind: 'cuda-expandable',
    granularity,
    hostAccessible: false,
    device,
    totalMemory: total,
    acquire,
    acquireOrThrow(size: number): ExpandableRegion {
      const region = acquire(size);
      if (region !== null) return region;
      const info = runtime.memoryInfo(device);
      throw new OutOfMemoryError({
        requested: size,
        alignment: granularity,
        capacity: Math.min(limit, info?.total ?? limit),
        freeBytes: Math.min(limit - table.reservedBytes, info?.free ?? limit),
        largestFreeBlock: 0,
        detail: `cuMemCreate could not map ${alignUp(size, granularity)} bytes on device ${device} (or the limit was reached).`,
      });
    },
    grow(region: ExpandableRegion, newSize: number): boolean {
      checkSize(newSize, 'newSize');
      const r = table.get(region?.address);
      if (r === undefined || r !== (region as unknown as MutableRegion)) {
        table.remove(region as unknown as MutableRegion); // throws the usual InvalidArgumentError
        return false;
      }
      const rounded = alignUp(newSize, granularity);
      if (rounded <= r.size) return true;
      if (rounded > r.reserved || rounded - r.size > limit - table.reservedBytes) return false;
      runtime.useDevice(device);
      const piece = mapPiece(r, r.size, rounded - r.size);
      if (piece === null) return false;
      r.pieces.push(piece);
      table.grew(rounded - r.size);
      r.size = rounded;
      return true;
    },
    release(region: ExpandableRegion): void {
      const r = region as unknown as MutableRegion;
      table.remove(r);
      unmapPieces(r);
      driver.addressFree(r.address, r.reserved);
    },
    reservedBytes: () => table.reservedBytes,
    memoryInfo: () => runtime.memGetInfo(device),
    regions: () => table.values(),
    ...eventMembers(hooks),
    dispose(): void {
      for (const region of table.values()) {
        table.remove(region);
        unmapPieces(region);
        driver.addressFree(region.address, region.reserved);
      }
      hooks.disposeEvents();
    },
  };
}
