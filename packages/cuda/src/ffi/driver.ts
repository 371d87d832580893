/**
 * The CUDA driver (libcuda) through koffi: only the virtual-memory management API that expandable
 * segments need (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`, the granularity
 * query, and their inverses). Statuses go through the same checked helper as the runtime's.
 */

import type { CudaCallArguments } from '../errors';
import { type BytesRequest, failure, hex, type StatusSource } from './check';
import type { IKoffiLib } from './koffi';
import { outSlot, pointerTooLarge, slotBigInt, slotFits, slotNumber } from './pointers';

const SUCCESS = 0;
/** `CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`. */
export const VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;
/** `CUmemAllocationProp` is 32 bytes; `CUmemAccessDesc` 12. */
const ALLOCATION_PROP_BYTES = 32;
const ACCESS_DESC_BYTES = 12;
/** `CU_MEM_ACCESS_FLAGS_PROT_READWRITE`. */
const PROT_READWRITE = 3;
/** `CU_MEM_ALLOC_GRANULARITY_RECOMMENDED`. */
const GRANULARITY_RECOMMENDED = 1;

function bind(lib: IKoffiLib) {
  const f = (signature: string) => lib.func(signature);
  return {
    init: f('int cuInit(unsigned int flags)'),
    getErrorName: f('int cuGetErrorName(int status, _Out_ const char **name)'),
    getErrorString: f('int cuGetErrorString(int status, _Out_ const char **text)'),
    deviceGetAttribute: f('int cuDeviceGetAttribute(_Out_ int *value, int attr, int device)'),
    granularity: f('int cuMemGetAllocationGranularity(void *granularity, void *prop, int option)'),
    addressReserve: f(
      'int cuMemAddressReserve(void *ptr, size_t size, size_t alignment, uint64_t addr, uint64_t flags)',
    ),
    addressFree: f('int cuMemAddressFree(uint64_t ptr, size_t size)'),
    create: f('int cuMemCreate(void *handle, size_t size, void *prop, uint64_t flags)'),
    release: f('int cuMemRelease(uint64_t handle)'),
    map: f(
      'int cuMemMap(uint64_t ptr, size_t size, size_t offset, uint64_t handle, uint64_t flags)',
    ),
    unmap: f('int cuMemUnmap(uint64_t ptr, size_t size)'),
    setAccess: f('int cuMemSetAccess(uint64_t ptr, size_t size, void *desc, size_t count)'),
  };
}

/** `CUmemAllocationProp` for pinned device memory on `device`. */
function allocationProp(device: number): Buffer {
  const prop = Buffer.alloc(ALLOCATION_PROP_BYTES);
  prop.writeInt32LE(1, 0); // type: CU_MEM_ALLOCATION_TYPE_PINNED
  prop.writeInt32LE(0, 4); // requestedHandleTypes: none
  prop.writeInt32LE(1, 8); // location.type: CU_MEM_LOCATION_TYPE_DEVICE
  prop.writeInt32LE(device, 12); // location.id
  return prop;
}

/** The CUDA driver library, loaded and bound. Every method checks its status. */
export class DriverLibrary implements StatusSource {
  readonly api = 'driver' as const;
  private readonly fn: ReturnType<typeof bind>;
  private readonly slot = outSlot();
  private readonly props = new Map<number, Buffer>();

  constructor(
    lib: IKoffiLib,
    /** Where the library was loaded from. */
    readonly path: string,
    /** Free and total memory of a device, for out-of-memory errors (from the runtime). */
    private readonly deviceMemory: (device: number) => { free: number; total: number } | null,
  ) {
    this.fn = bind(lib);
  }

  statusName(status: number): string {
    const out: (string | null)[] = [null];
    return this.fn.getErrorName(status, out) === SUCCESS && out[0] ? out[0] : `CUresult ${status}`;
  }

  statusDescription(status: number): string {
    const out: (string | null)[] = [null];
    return this.fn.getErrorString(status, out) === SUCCESS && out[0] ? out[0] : 'unknown status';
  }

  memoryInfo(device: number): { free: number; total: number } | null {
    return this.deviceMemory(device);
  }

  private fail(
    status: number,
    call: string,
    args: CudaCallArguments,
    request?: BytesRequest,
  ): Error {
    return failure(this, status, call, args, request);
  }

  /** `cuInit(0)`'s raw status (the availability probe; never throws). */
  probe(): number {
    return this.fn.init(0) as number;
  }

  attribute(attr: number, device: number): number {
    const out = [0];
    const s = this.fn.deviceGetAttribute(out, attr, device);
    if (s !== SUCCESS) throw this.fail(s, 'cuDeviceGetAttribute', { attrib: attr, dev: device });
    return out[0] ?? 0;
  }

  private prop(device: number): Buffer {
    let prop = this.props.get(device);
    if (prop === undefined) {
      prop = allocationProp(device);
      this.props.set(device, prop);
    }
    return prop;
  }

  /** Recommended granularity of physical allocations on `device`, in bytes. */
  granularity(device: number): number {
    const s = this.fn.granularity(this.slot, this.prop(device), GRANULARITY_RECOMMENDED);
    if (s !== SUCCESS)
      throw this.fail(s, 'cuMemGetAllocationGranularity', { device, option: 'recommended' });
    return slotNumber(this.slot);
  }

  /** Reserves `size` bytes of device address space (no memory behind it yet). */
  addressReserve(size: number, alignment: number): number {
    const s = this.fn.addressReserve(this.slot, size, alignment, 0, 0);
    if (s !== SUCCESS) {
      throw this.fail(
        s,
        'cuMemAddressReserve',
        { size, alignment, addr: '0x0', flags: 0 },
        { bytes: size, device: 'host' },
      );
    }
    if (slotFits(this.slot)) return slotNumber(this.slot);
    const value = slotBigInt(this.slot);
    this.fn.addressFree(value, size);
    throw pointerTooLarge('cuMemAddressReserve', value);
  }

  addressFree(address: number, size: number): void {
    const s = this.fn.addressFree(address, size);
    if (s !== SUCCESS) throw this.fail(s, 'cuMemAddressFree', { ptr: hex(address), size });
  }

  /** Physical memory of `size` bytes on `device`; returns its handle. */
  create(size: number, device: number): number {
    const s = this.fn.create(this.slot, size, this.prop(device), 0);
    if (s !== SUCCESS) {
      throw this.fail(s, 'cuMemCreate', { size, device, flags: 0 }, { bytes: size, device });
    }
    if (slotFits(this.slot)) return slotNumber(this.slot);
    const value = slotBigInt(this.slot);
    this.fn.release(value);
    throw pointerTooLarge('cuMemCreate', value);
  }

  release(handle: number): void {
    const s = this.fn.release(handle);
    if (s !== SUCCESS) throw this.fail(s, 'cuMemRelease', { handle: hex(handle) });
  }

  map(address: number, size: number, handle: number): void {
    const s = this.fn.map(address, size, 0, handle, 0);
    if (s !== SUCCESS) {
      throw this.fail(s, 'cuMemMap', {
        ptr: hex(address),
        size,
        offset: 0,
        handle: hex(handle),
        flags: 0,
      });
    }
  }

  unmap(address: number, size: number): void {
    const s = this.fn.unmap(address, size);
    if (s !== SUCCESS) throw this.fail(s, 'cuMemUnmap', { ptr: hex(address), size });
  }

  /** Makes `[address, address + size)` readable and writable from `device`. */
  setAccess(address: number, size: number, device: number): void {
    const desc = Buffer.alloc(ACCESS_DESC_BYTES);
    desc.writeInt32LE(1, 0); // location.type: device
    desc.writeInt32LE(device, 4); // location.id
    desc.writeInt32LE(PROT_READWRITE, 8);
    const s = this.fn.setAccess(address, size, desc, 1);
    if (s !== SUCCESS) {
      throw this.fail(s, 'cuMemSetAccess', {
        ptr: hex(address),
        size,
        device,
        flags: 'PROT_READWRITE',
      });
    }
  }
}
