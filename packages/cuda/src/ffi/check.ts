/**
 * The one checked-call helper: turns a failed status into a typed error. Out of memory (status 2:
 * `cudaErrorMemoryAllocation`, `CUDA_ERROR_OUT_OF_MEMORY`) on a call that asked for bytes becomes
 * core's `OutOfMemoryError` with the byte count and, when the device can say, its free and total
 * memory; every other status becomes a `CudaError` with the status's name and description, the
 * call and its arguments.
 *
 * Call sites stay cheap: `const s = fn(...); if (s !== 0) throw failure(...)` builds nothing on
 * success.
 */
import { OutOfMemoryError } from '@allot/core';
import { type CudaApi, type CudaCallArguments, CudaError } from '../errors';

/** Status shared by the runtime and the driver for out of memory. */
export const STATUS_OUT_OF_MEMORY = 2;

/** What the helper needs from a library to describe a status. */
export interface StatusSource {
  readonly api: CudaApi;
  statusName(status: number): string;
  statusDescription(status: number): string;
  /** Free and total bytes of `device`, or null when it cannot be known. */
  memoryInfo(device: number): { free: number; total: number } | null;
}

/** Where an out-of-memory figure comes from. */
export interface BytesRequest {
  readonly bytes: number;
  /** Device whose memory was asked for; `host` for pinned host memory. */
  readonly device: number | 'host';
}

/** Formats a pointer argument. */
export function hex(value: number | bigint): string {
  return `0x${value.toString(16)}`;
}

/** The typed error for `status` returned by `call(args)`. */
export function failure(
  source: StatusSource,
  status: number,
  call: string,
  args: CudaCallArguments,
  request?: BytesRequest,
): Error {
  const statusName = source.statusName(status);
  const description = source.statusDescription(status);
  const cause = new CudaError({ status, statusName, description, call, args, api: source.api });
  if (status !== STATUS_OUT_OF_MEMORY || request === undefined) return cause;
  const info = request.device === 'host' ? null : source.memoryInfo(request.device);
  const where = request.device === 'host' ? 'pinned host memory' : `device ${request.device}`;
  const figures =
    info === null
      ? `${where} did not report its free memory`
      : `${where} reports ${info.free} bytes free of ${info.total}`;
  return new OutOfMemoryError(
    {
      requested: request.bytes,
      alignment: 1,
      capacity: info?.total ?? 0,
      freeBytes: info?.free ?? 0,
      largestFreeBlock: 0,
      reason: info !== null && info.free >= request.bytes ? 'fragmentation' : 'exhaustion',
      detail: `${cause.message} ${figures}; CUDA does not report the largest free block (shown as 0).`,
    },
    { cause },
  );
}
