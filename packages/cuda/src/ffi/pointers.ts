/**
 * Pointers cross the FFI as plain numbers. Out-parameters (`void **`) are written into an 8-byte
 * scratch array and read back as two 32-bit halves, so no BigInt is made on the hot path; every
 * value is checked to lie below 2^53, where JavaScript numbers are exact.
 */
import { TWO_POW_32, UnsupportedError } from '@allot/core';
import { koffi } from './koffi';

/** High half of 2^53: a pointer whose high 32 bits reach this is not an exact number. */
const HIGH_LIMIT = 0x200000;

/** An 8-byte out-parameter for one pointer or `size_t`. */
export function outSlot(): Uint32Array {
  return new Uint32Array(2);
}

/** The 64-bit value in `slot`, exact as a BigInt. */
export function slotBigInt(slot: Uint32Array): bigint {
  return (BigInt(slot[1]!) << 32n) | BigInt(slot[0]!);
}

/** Whether the value in `slot` is below 2^53. */
export function slotFits(slot: Uint32Array): boolean {
  return slot[1]! < HIGH_LIMIT;
}

/** The value in `slot` as a number (callers check {@link slotFits} first for pointers). */
export function slotNumber(slot: Uint32Array): number {
  return slot[1]! * TWO_POW_32 + slot[0]!;
}

/** The error for a pointer at or above 2^53. */
export function pointerTooLarge(call: string, value: bigint): UnsupportedError {
  return new UnsupportedError(
    `${call} returned the pointer 0x${value.toString(16)}, which is not below 2^53: a JavaScript number ` +
      'cannot hold it exactly, so @allot/cuda cannot use it (the memory was given back). Addresses ' +
      'above 2^53 do not occur on current x86-64 and arm64 Linux systems (47- or 48-bit address spaces).',
  );
}

/** An ArrayBuffer over `size` bytes of host memory at `address` (pinned or managed memory). */
export function hostView(address: number, size: number): ArrayBuffer {
  const pointer = koffi().decode(new BigUint64Array([BigInt(address)]), 'void *');
  return koffi().view(pointer, size);
}

/** Address of the first byte of a typed array or buffer. */
export function addressOf(view: ArrayBufferView): number {
  return Number(koffi().address(view));
}
