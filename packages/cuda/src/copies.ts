/**
 * Copies between host typed arrays and device memory, and within device memory, synchronous or
 * ordered on a stream. Every copy is checked against the allocation it touches (a `DeviceSpan`:
 * a source's region, or `deviceSpan(allocator, address)` for a block of an allocator) before any
 * native call, so an out-of-bounds copy is an `InvalidArgumentError`, never a corrupted neighbour.
 */
import { type Allocator, checkNonNegativeInteger, InvalidArgumentError } from '@allot/core';
import { openRuntime } from './ffi/open';
import { hostBytes, type RuntimeLibrary } from './ffi/runtime';
import type { CudaLibraryOptions } from './options';
import { type CudaStream, runtimeOf } from './streams';

/** An allocation in device memory: its first byte and its usable size. */
export interface DeviceSpan {
  readonly address: number;
  readonly size: number;
}

/** Options of the copies. */
export interface CopyOptions extends CudaLibraryOptions {
  /** Bytes from the start of the device allocation. @defaultValue 0 */
  readonly offset?: number;
  /**
   * Queue the copy on this stream instead of copying synchronously. The host buffer is held until
   * the stream is synchronized; do not read (device → host) or change (host → device) it before.
   */
  readonly stream?: CudaStream;
}

/** Options of {@link copyDeviceToDevice}. */
export interface DeviceCopyOptions extends CudaLibraryOptions {
  /** Bytes from the start of the destination. @defaultValue 0 */
  readonly dstOffset?: number;
  /** Bytes from the start of the source. @defaultValue 0 */
  readonly srcOffset?: number;
  /** Queue the copy on this stream. @defaultValue synchronous */
  readonly stream?: CudaStream;
}

/**
 * The span of a live block of `allocator` at `address`: its usable size bounds the copies.
 * @throws InvalidArgumentError when `address` is not a live block of `allocator`.
 */
export function deviceSpan(allocator: Allocator, address: number): DeviceSpan {
  if (!allocator.owns(address)) {
    throw new InvalidArgumentError(
      'address',
      `0x${Number(address).toString(16)}`,
      'the start of a live block of this allocator',
    );
  }
  return { address, size: allocator.usableSize(address) };
}

function checkSpan(span: DeviceSpan, name: string): void {
  if (
    typeof span !== 'object' ||
    span === null ||
    !Number.isSafeInteger(span.address) ||
    span.address <= 0 ||
    !Number.isSafeInteger(span.size) ||
    span.size < 0
  ) {
    throw new InvalidArgumentError(name, span, 'a device span { address, size } of safe integers');
  }
}

function checkRange(span: DeviceSpan, offset: number, bytes: number, name: string): void {
  checkNonNegativeInteger(offset, `${name} offset`);
  if (offset + bytes > span.size) {
    throw new InvalidArgumentError(
      'bytes',
      bytes,
      `at most ${Math.max(0, span.size - offset)} bytes: the ${name} allocation at 0x${span.address.toString(16)} has ${span.size} usable bytes and the copy starts ${offset} bytes in`,
    );
  }
}

function checkHost(view: ArrayBufferView, name: string): void {
  if (!ArrayBuffer.isView(view))
    throw new InvalidArgumentError(name, view, 'a typed array, Buffer or DataView');
}

function runtimeFor(
  options: CudaLibraryOptions & { readonly stream?: CudaStream },
): RuntimeLibrary {
  return options.stream !== undefined ? runtimeOf(options.stream) : openRuntime(options).runtime;
}

/** Copies all of `src` into device memory at `dst.address + offset`. */
export function copyHostToDevice(
  dst: DeviceSpan,
  src: ArrayBufferView,
  options: CopyOptions = {},
): void {
  checkSpan(dst, 'dst');
  checkHost(src, 'src');
  const offset = options.offset ?? 0;
  checkRange(dst, offset, src.byteLength, 'destination');
  if (src.byteLength === 0) return;
  const runtime = runtimeFor(options);
  const bytes = hostBytes(src);
  if (options.stream === undefined) {
    runtime.copyToDevice(dst.address + offset, bytes, src.byteLength, null);
  } else {
    runtime.copyToDevice(dst.address + offset, bytes, src.byteLength, options.stream.handle);
    options.stream.hold(bytes);
  }
}

/** Fills all of `dst` from device memory at `src.address + offset`. */
export function copyDeviceToHost(
  dst: ArrayBufferView,
  src: DeviceSpan,
  options: CopyOptions = {},
): void {
  checkHost(dst, 'dst');
  checkSpan(src, 'src');
  const offset = options.offset ?? 0;
  checkRange(src, offset, dst.byteLength, 'source');
  if (dst.byteLength === 0) return;
  const runtime = runtimeFor(options);
  const bytes = hostBytes(dst);
  if (options.stream === undefined) {
    runtime.copyToHost(bytes, src.address + offset, dst.byteLength, null);
  } else {
    runtime.copyToHost(bytes, src.address + offset, dst.byteLength, options.stream.handle);
    options.stream.hold(bytes);
  }
}

/** Copies `bytes` bytes from one device allocation to another (or within one). */
export function copyDeviceToDevice(
  dst: DeviceSpan,
  src: DeviceSpan,
  bytes: number,
  options: DeviceCopyOptions = {},
): void {
  checkSpan(dst, 'dst');
  checkSpan(src, 'src');
  checkNonNegativeInteger(bytes, 'bytes');
  const dstOffset = options.dstOffset ?? 0;
  const srcOffset = options.srcOffset ?? 0;
  checkRange(dst, dstOffset, bytes, 'destination');
  checkRange(src, srcOffset, bytes, 'source');
  if (bytes === 0) return;
  runtimeFor(options).copyOnDevice(
    dst.address + dstOffset,
    src.address + srcOffset,
    bytes,
    options.stream?.handle ?? null,
  );
}

/** Sets `bytes` bytes of device memory (default: the rest of the allocation) to `value` (0–255). */
export function fillDevice(
  dst: DeviceSpan,
  value: number,
  bytes?: number,
  options: CopyOptions = {},
): void {
  checkSpan(dst, 'dst');
  if (!Number.isInteger(value) || value < 0 || value > 255) {
    throw new InvalidArgumentError('value', value, 'a byte value from 0 to 255');
  }
  const offset = options.offset ?? 0;
  checkNonNegativeInteger(offset, 'offset');
  const count = bytes ?? dst.size - offset;
  checkNonNegativeInteger(count, 'bytes');
  checkRange(dst, offset, count, 'destination');
  if (count === 0) return;
  runtimeFor(options).memset(dst.address + offset, value, count, options.stream?.handle ?? null);
}
