/**
 * The CUDA runtime (libcudart) through koffi: every function @allot/cuda calls, declared once per
 * library, each behind a method that checks the status with the one helper in `check.ts`. The
 * declarations and the helpers of the checked calls are in `runtime-binding.ts`.
 *
 * Signatures: device pointers and handles (`cudaStream_t`, `cudaEvent_t`, `cudaMemPool_t`) pass as
 * `uint64_t` numbers; `void **` out-parameters are an 8-byte scratch array (see `pointers.ts`);
 * host buffers pass as typed arrays. `cudaMemPrefetchAsync` and `cudaMemAdvise` take a
 * `struct cudaMemLocation` by value from CUDA 13 on and an `int` device before it: the form is chosen
 * from `cudaRuntimeGetVersion`.
 */

import { hex } from './check';
import { type IKoffiCType, type IKoffiLib, koffi } from './koffi';
import { slotNumber } from './pointers';
import { RuntimeBinding, SUCCESS } from './runtime-binding';

export { SUCCESS };
export const NOT_READY = 600;

/** `cudaMemcpyKind`. */
const HOST_TO_DEVICE = 1;
const DEVICE_TO_HOST = 2;
const DEVICE_TO_DEVICE = 3;

/** `cudaDeviceAttr` values used here. */
export const Attribute = {
  ComputeCapabilityMajor: 75,
  ComputeCapabilityMinor: 76,
  ManagedMemory: 83,
  ConcurrentManagedAccess: 89,
  MemoryPoolsSupported: 115,
} as const;

/** `cudaMemPoolAttr` values used here. */
export const PoolAttribute = {
  ReleaseThreshold: 4,
  ReservedMemCurrent: 5,
  UsedMemCurrent: 7,
} as const;

/** Where managed memory should live: a device, or the host. */
export type MemoryLocation =
  | { readonly kind: 'device'; readonly device: number }
  | { readonly kind: 'host' };

/** `cudaDeviceProp` is ~1 KiB and grows between versions; its first 256 bytes are the name. */
const DEVICE_PROP_BYTES = 8192;
/** `cudaMemPoolProps` is 88 bytes in CUDA 12 and 13; zero padding beyond is harmless. */
const POOL_PROPS_BYTES = 128;
const CPU_DEVICE_ID = -1;

let locationType: IKoffiCType | undefined;
/** `struct cudaMemLocation { int type; int id; }`, declared once per process. */
function memLocationType(): IKoffiCType {
  locationType ??= koffi().struct('allot_cudaMemLocation', { type: 'int', id: 'int' });
  return locationType;
}

function bindManaged(lib: IKoffiLib, version: number) {
  if (version >= 13000) {
    const location = memLocationType();
    return {
      modern: true,
      prefetch: lib.func('cudaMemPrefetchAsync', 'int', [
        'uint64_t',
        'size_t',
        location,
        'unsigned int',
        'uint64_t',
      ]),
      advise: lib.func('cudaMemAdvise', 'int', ['uint64_t', 'size_t', 'int', location]),
    };
  }
  return {
    modern: false,
    prefetch: lib.func(
      'int cudaMemPrefetchAsync(uint64_t devPtr, size_t count, int device, uint64_t stream)',
    ),
    advise: lib.func('int cudaMemAdvise(uint64_t devPtr, size_t count, int advice, int device)'),
  };
}

/** Bytes of a host buffer: typed arrays pass as they are, a DataView as a byte view over it. */
export function hostBytes(view: ArrayBufferView): ArrayBufferView {
  return view instanceof DataView
    ? new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
    : view;
}

/** The CUDA runtime library, loaded and bound. Every method checks its status. */
/** The CUDA runtime library, loaded and bound. Every method checks its status. */
export class RuntimeLibrary extends RuntimeBinding {
  private managedFns: ReturnType<typeof bindManaged> | undefined;

  // ── devices ─────────────────────────────────────────────────────────────────────────────────
  /** `cudaGetDeviceCount`'s raw status and count (the availability probe; never throws). */
  probe(): { status: number; count: number } {
    const out = [0];
    const status = this.fn.getDeviceCount(out) as number;
    return { status, count: status === SUCCESS ? (out[0] ?? 0) : 0 };
  }

  driverVersion(): number {
    const out = [0];
    return this.fn.driverGetVersion(out) === SUCCESS ? (out[0] ?? 0) : 0;
  }

  deviceName(device: number): string {
    const prop = Buffer.alloc(DEVICE_PROP_BYTES);
    const s = this.fn.getDeviceProperties(prop, device);
    if (s !== SUCCESS) throw this.fail(s, 'cudaGetDeviceProperties', { device });
    const end = prop.indexOf(0);
    return prop.toString('utf8', 0, end < 0 || end > 256 ? 256 : end);
  }

  attribute(attr: number, device: number): number {
    const out = [0];
    const s = this.fn.deviceGetAttribute(out, attr, device);
    if (s !== SUCCESS) throw this.fail(s, 'cudaDeviceGetAttribute', { attr, device });
    return out[0] ?? 0;
  }

  pciBusId(device: number): string {
    const buffer = Buffer.alloc(64);
    const s = this.fn.deviceGetPCIBusId(buffer, buffer.length, device);
    if (s !== SUCCESS) throw this.fail(s, 'cudaDeviceGetPCIBusId', { len: buffer.length, device });
    const end = buffer.indexOf(0);
    return buffer.toString('latin1', 0, end < 0 ? buffer.length : end);
  }

  memGetInfo(device: number): { free: number; total: number } {
    this.useDevice(device);
    const s = this.fn.memGetInfo(this.slot, this.slot2);
    if (s !== SUCCESS) throw this.fail(s, 'cudaMemGetInfo', { device });
    return { free: slotNumber(this.slot), total: slotNumber(this.slot2) };
  }

  deviceSynchronize(): void {
    const s = this.fn.deviceSynchronize();
    if (s !== SUCCESS) throw this.fail(s, 'cudaDeviceSynchronize', {});
  }

  /** `cudaPeekAtLastError`: the cheapest call there is, for measuring the FFI itself. */
  peekAtLastError(): number {
    return this.fn.peekAtLastError() as number;
  }

  // ── device memory ───────────────────────────────────────────────────────────────────────────
  malloc(size: number, device: number): number {
    this.useDevice(device);
    const s = this.fn.malloc(this.slot, size);
    if (s !== SUCCESS) throw this.fail(s, 'cudaMalloc', { size }, { bytes: size, device });
    return this.pointer('cudaMalloc', (p) => this.fn.free(p));
  }

  free(address: number): void {
    const s = this.fn.free(address);
    if (s !== SUCCESS) throw this.fail(s, 'cudaFree', { devPtr: hex(address) });
  }

  mallocManaged(size: number, flags: number, device: number): number {
    this.useDevice(device);
    const s = this.fn.mallocManaged(this.slot, size, flags);
    if (s !== SUCCESS)
      throw this.fail(s, 'cudaMallocManaged', { size, flags }, { bytes: size, device });
    return this.pointer('cudaMallocManaged', (p) => this.fn.free(p));
  }

  private managed(): ReturnType<typeof bindManaged> {
    this.managedFns ??= bindManaged(this.lib, this.version);
    return this.managedFns;
  }

  private location(where: MemoryLocation): { type: number; id: number } | number {
    if (this.managed().modern) {
      return where.kind === 'device' ? { type: 1, id: where.device } : { type: 2, id: 0 };
    }
    return where.kind === 'device' ? where.device : CPU_DEVICE_ID;
  }

  memPrefetch(address: number, size: number, where: MemoryLocation, stream: number): void {
    const m = this.managed();
    const location = this.location(where);
    const s = m.modern
      ? m.prefetch(address, size, location, 0, stream)
      : m.prefetch(address, size, location, stream);
    if (s !== SUCCESS) {
      throw this.fail(s, 'cudaMemPrefetchAsync', {
        devPtr: hex(address),
        count: size,
        location: where.kind === 'device' ? `device ${where.device}` : 'host',
        stream: hex(stream),
      });
    }
  }

  memAdvise(address: number, size: number, advice: number, where: MemoryLocation): void {
    const s = this.managed().advise(address, size, advice, this.location(where));
    if (s !== SUCCESS) {
      throw this.fail(s, 'cudaMemAdvise', {
        devPtr: hex(address),
        count: size,
        advice,
        location: where.kind === 'device' ? `device ${where.device}` : 'host',
      });
    }
  }

  // ── pinned host memory ──────────────────────────────────────────────────────────────────────
  hostAlloc(size: number, flags: number): number {
    const s = this.fn.hostAlloc(this.slot, size, flags);
    if (s !== SUCCESS)
      throw this.fail(s, 'cudaHostAlloc', { size, flags }, { bytes: size, device: 'host' });
    return this.pointer('cudaHostAlloc', (p) => this.fn.freeHost(p));
  }

  freeHost(address: number): void {
    const s = this.fn.freeHost(address);
    if (s !== SUCCESS) throw this.fail(s, 'cudaFreeHost', { ptr: hex(address) });
  }

  hostRegister(address: number, size: number, flags: number): void {
    const s = this.fn.hostRegister(address, size, flags);
    if (s !== SUCCESS) {
      throw this.fail(
        s,
        'cudaHostRegister',
        { ptr: hex(address), size, flags },
        { bytes: size, device: 'host' },
      );
    }
  }

  hostUnregister(address: number): void {
    const s = this.fn.hostUnregister(address);
    if (s !== SUCCESS) throw this.fail(s, 'cudaHostUnregister', { ptr: hex(address) });
  }

  // ── streams and events ──────────────────────────────────────────────────────────────────────
  streamCreate(flags: number, device: number): number {
    this.useDevice(device);
    const s = this.fn.streamCreateWithFlags(this.slot, flags);
    if (s !== SUCCESS) throw this.fail(s, 'cudaStreamCreateWithFlags', { flags });
    return this.pointer('cudaStreamCreateWithFlags', (p) => this.fn.streamDestroy(p));
  }

  streamDestroy(stream: number): void {
    const s = this.fn.streamDestroy(stream);
    if (s !== SUCCESS) throw this.fail(s, 'cudaStreamDestroy', { stream: hex(stream) });
  }

  streamSynchronize(stream: number): void {
    const s = this.fn.streamSynchronize(stream);
    if (s !== SUCCESS) throw this.fail(s, 'cudaStreamSynchronize', { stream: hex(stream) });
  }

  /** Whether the work queued on `stream` has completed. */
  streamQuery(stream: number): boolean {
    const s = this.fn.streamQuery(stream);
    if (s === SUCCESS) return true;
    if (s === NOT_READY) return false;
    throw this.fail(s, 'cudaStreamQuery', { stream: hex(stream) });
  }

  eventCreate(flags: number): number {
    const s = this.fn.eventCreateWithFlags(this.slot, flags);
    if (s !== SUCCESS) throw this.fail(s, 'cudaEventCreateWithFlags', { flags });
    return this.pointer('cudaEventCreateWithFlags', (p) => this.fn.eventDestroy(p));
  }

  eventRecord(event: number, stream: number): void {
    const s = this.fn.eventRecord(event, stream);
    if (s !== SUCCESS)
      throw this.fail(s, 'cudaEventRecord', { event: hex(event), stream: hex(stream) });
  }

  /** Whether the work before `event` has completed. */
  eventQuery(event: number): boolean {
    const s = this.fn.eventQuery(event);
    if (s === SUCCESS) return true;
    if (s === NOT_READY) return false;
    throw this.fail(s, 'cudaEventQuery', { event: hex(event) });
  }

  eventSynchronize(event: number): void {
    const s = this.fn.eventSynchronize(event);
    if (s !== SUCCESS) throw this.fail(s, 'cudaEventSynchronize', { event: hex(event) });
  }

  eventElapsedMs(start: number, end: number): number {
    const out = [0];
    const s = this.fn.eventElapsedTime(out, start, end);
    if (s !== SUCCESS)
      throw this.fail(s, 'cudaEventElapsedTime', { start: hex(start), end: hex(end) });
    return out[0] ?? 0;
  }

  eventDestroy(event: number): void {
    const s = this.fn.eventDestroy(event);
    if (s !== SUCCESS) throw this.fail(s, 'cudaEventDestroy', { event: hex(event) });
  }

  // ── copies ──────────────────────────────────────────────────────────────────────────────────
  /** Host bytes to device memory; with `stream` (≥ 0), queued on it. */
  copyToDevice(dst: number, src: ArrayBufferView, bytes: number, stream: number | null): void {
    const s =
      stream === null
        ? this.fn.memcpyToDevice(dst, src, bytes, HOST_TO_DEVICE)
        : this.fn.memcpyToDeviceAsync(dst, src, bytes, HOST_TO_DEVICE, stream);
    if (s !== SUCCESS) {
      throw this.fail(s, stream === null ? 'cudaMemcpy' : 'cudaMemcpyAsync', {
        dst: hex(dst),
        src: 'host buffer',
        count: bytes,
        kind: 'cudaMemcpyHostToDevice',
        ...(stream === null ? {} : { stream: hex(stream) }),
      });
    }
  }

  /** Device memory to host bytes; with `stream`, queued on it. */
  copyToHost(dst: ArrayBufferView, src: number, bytes: number, stream: number | null): void {
    const s =
      stream === null
        ? this.fn.memcpyToHost(dst, src, bytes, DEVICE_TO_HOST)
        : this.fn.memcpyToHostAsync(dst, src, bytes, DEVICE_TO_HOST, stream);
    if (s !== SUCCESS) {
      throw this.fail(s, stream === null ? 'cudaMemcpy' : 'cudaMemcpyAsync', {
        dst: 'host buffer',
        src: hex(src),
        count: bytes,
        kind: 'cudaMemcpyDeviceToHost',
        ...(stream === null ? {} : { stream: hex(stream) }),
      });
    }
  }

  /** Device memory to device memory; with `stream`, queued on it. */
  copyOnDevice(dst: number, src: number, bytes: number, stream: number | null): void {
    const s =
      stream === null
        ? this.fn.memcpyAddresses(dst, src, bytes, DEVICE_TO_DEVICE)
        : this.fn.memcpyAddressesAsync(dst, src, bytes, DEVICE_TO_DEVICE, stream);
    if (s !== SUCCESS) {
      throw this.fail(s, stream === null ? 'cudaMemcpy' : 'cudaMemcpyAsync', {
        dst: hex(dst),
        src: hex(src),
        count: bytes,
        kind: 'cudaMemcpyDeviceToDevice',
        ...(stream === null ? {} : { stream: hex(stream) }),
      });
    }
  }

  memset(address: number, value: number, bytes: number, stream: number | null): void {
    const s =
      stream === null
        ? this.fn.memset(address, value, bytes)
        : this.fn.memsetAsync(address, value, bytes, stream);
    if (s !== SUCCESS) {
      throw this.fail(s, stream === null ? 'cudaMemset' : 'cudaMemsetAsync', {
        devPtr: hex(address),
        value,
        count: bytes,
        ...(stream === null ? {} : { stream: hex(stream) }),
      });
    }
  }

  // ── stream-ordered allocation ───────────────────────────────────────────────────────────────
  memPoolCreate(device: number, releaseThreshold: number): number {
    const props = Buffer.alloc(POOL_PROPS_BYTES);
    props.writeInt32LE(1, 0); // allocType: cudaMemAllocationTypePinned
    props.writeInt32LE(0, 4); // handleTypes: none
    props.writeInt32LE(1, 8); // location.type: cudaMemLocationTypeDevice
    props.writeInt32LE(device, 12); // location.id
    const s = this.fn.memPoolCreate(this.slot, props);
    if (s !== SUCCESS) throw this.fail(s, 'cudaMemPoolCreate', { device });
    const pool = this.pointer('cudaMemPoolCreate', (p) => this.fn.memPoolDestroy(p));
    try {
      this.memPoolSetAttribute(pool, PoolAttribute.ReleaseThreshold, releaseThreshold);
    } catch (error) {
      this.fn.memPoolDestroy(pool);
      throw error;
    }
    return pool;
  }

  defaultMemPool(device: number): number {
    const s = this.fn.deviceGetDefaultMemPool(this.slot, device);
    if (s !== SUCCESS) throw this.fail(s, 'cudaDeviceGetDefaultMemPool', { device });
    return this.pointer('cudaDeviceGetDefaultMemPool');
  }

  memPoolDestroy(pool: number): void {
    const s = this.fn.memPoolDestroy(pool);
    if (s !== SUCCESS) throw this.fail(s, 'cudaMemPoolDestroy', { memPool: hex(pool) });
  }

  memPoolSetAttribute(pool: number, attr: number, value: number): void {
    const v = new BigUint64Array([BigInt(value)]);
    const s = this.fn.memPoolSetAttribute(pool, attr, v);
    if (s !== SUCCESS)
      throw this.fail(s, 'cudaMemPoolSetAttribute', { memPool: hex(pool), attr, value });
  }

  memPoolAttribute(pool: number, attr: number): number {
    const s = this.fn.memPoolGetAttribute(pool, attr, this.slot2);
    if (s !== SUCCESS) throw this.fail(s, 'cudaMemPoolGetAttribute', { memPool: hex(pool), attr });
    return slotNumber(this.slot2);
  }

  memPoolTrimTo(pool: number, keep: number): void {
    const s = this.fn.memPoolTrimTo(pool, keep);
    if (s !== SUCCESS)
      throw this.fail(s, 'cudaMemPoolTrimTo', { memPool: hex(pool), minBytesToKeep: keep });
  }

  mallocFromPool(size: number, pool: number, stream: number, device: number): number {
    const s = this.fn.mallocFromPoolAsync(this.slot, size, pool, stream);
    if (s !== SUCCESS) {
      throw this.fail(
        s,
        'cudaMallocFromPoolAsync',
        { size, memPool: hex(pool), stream: hex(stream) },
        { bytes: size, device },
      );
    }
    return this.pointer('cudaMallocFromPoolAsync', (p) => this.fn.freeAsync(p, stream));
  }

  mallocAsync(size: number, stream: number, device: number): number {
    this.useDevice(device);
    const s = this.fn.mallocAsync(this.slot, size, stream);
    if (s !== SUCCESS) {
      throw this.fail(s, 'cudaMallocAsync', { size, stream: hex(stream) }, { bytes: size, device });
    }
    return this.pointer('cudaMallocAsync', (p) => this.fn.freeAsync(p, stream));
  }

  freeAsync(address: number, stream: number): void {
    const s = this.fn.freeAsync(address, stream);
    if (s !== SUCCESS)
      throw this.fail(s, 'cudaFreeAsync', { devPtr: hex(address), stream: hex(stream) });
  }
}
