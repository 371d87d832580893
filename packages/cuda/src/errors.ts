/**
 * Errors of @allot/cuda. A failed CUDA call is a `CudaError` (status, its name and description, the
 * call and its arguments); out-of-memory statuses become core's `OutOfMemoryError`; a machine where
 * CUDA cannot be used at all (no library, no driver, no device) raises `CudaUnavailableError`, a core
 * `UnsupportedError` that lists what was tried. `isInstance` works across duplicated package copies.
 */
import { AllotError, UnsupportedError } from '@allot/core';

const CUDA_ERROR_MARKER = Symbol.for('@allot/cuda/error');
const UNAVAILABLE_MARKER = Symbol.for('@allot/cuda/unavailable');

/** Stable codes of this package's errors. */
export const CudaErrorCode = {
  /** A CUDA runtime or driver call returned an error status. */
  Call: 'ALLOT_CUDA_ERROR',
} as const;

/** Arguments of a failed call, by parameter name (pointers as hex strings). */
export type CudaCallArguments = Readonly<Record<string, string | number | boolean>>;

/** Which API a status came from. */
export type CudaApi = 'runtime' | 'driver';

export interface CudaErrorDetails {
  /** The status code (`cudaError_t` or `CUresult`). */
  readonly status: number;
  /** Its symbolic name, for example `cudaErrorInvalidValue`. */
  readonly statusName: string;
  /** Its description, for example `invalid argument`. */
  readonly description: string;
  /** The call that failed, for example `cudaFree`. */
  readonly call: string;
  /** Its arguments. */
  readonly args: CudaCallArguments;
  /** `runtime` (libcudart) or `driver` (libcuda). */
  readonly api: CudaApi;
}

function describeArguments(args: CudaCallArguments): string {
  return Object.entries(args)
    .map(([key, value]) => `${key}=${value}`)
    .join(', ');
}

/** A CUDA call returned an error status (other than out of memory). */
export class CudaError extends AllotError implements CudaErrorDetails {
  static readonly code = CudaErrorCode.Call;
  readonly status: number;
  readonly statusName: string;
  readonly description: string;
  readonly call: string;
  readonly args: CudaCallArguments;
  readonly api: CudaApi;

  constructor(details: CudaErrorDetails, options?: { cause?: unknown }) {
    super(
      CudaErrorCode.Call,
      `${details.call}(${describeArguments(details.args)}) failed: ${details.statusName} (${details.status}): ${details.description}.`,
      options,
    );
    this.status = details.status;
    this.statusName = details.statusName;
    this.description = details.description;
    this.call = details.call;
    this.args = details.args;
    this.api = details.api;
    Object.defineProperty(this, CUDA_ERROR_MARKER, { value: true, enumerable: false });
  }

  static override isInstance(value: unknown): value is CudaError {
    return (
      AllotError.isInstance(value) &&
      value.code === CudaErrorCode.Call &&
      (value as unknown as Record<symbol, unknown>)[CUDA_ERROR_MARKER] === true
    );
  }
}

/** One place CUDA was looked for, and why it could not be used. */
export interface CudaAttempt {
  /** A path, or a bare library name left to the dynamic loader. */
  readonly path: string;
  /** Where the candidate came from: `option`, `ALLOT_CUDART_PATH`, `CUDA_HOME`, `loader`, ... */
  readonly origin: string;
  /** Why it failed (`not found`, the loader's message, or the status a probe returned). */
  readonly failure: string;
}

export interface CudaUnavailableDetails {
  /** `runtime` (libcudart) or `driver` (libcuda). */
  readonly api: CudaApi;
  /** Every candidate tried, in order. */
  readonly attempts: readonly CudaAttempt[];
  /** Environment variable that names the library explicitly. */
  readonly envVariable: string;
  /** Status of the probe call when a library loaded but CUDA is unusable (35: no driver). */
  readonly status?: number;
  /** The library that loaded, when one did. */
  readonly loadedPath?: string;
  /** One line on what to do. */
  readonly hint?: string;
}

/**
 * CUDA cannot be used here: no library loaded, or the library loaded but reports no driver or no
 * device. A core `UnsupportedError` (code `ALLOT_UNSUPPORTED`).
 */
export class CudaUnavailableError extends UnsupportedError implements CudaUnavailableDetails {
  readonly api: CudaApi;
  readonly attempts: readonly CudaAttempt[];
  readonly envVariable: string;
  readonly status?: number;
  readonly loadedPath?: string;
  readonly hint?: string;

  constructor(summary: string, details: CudaUnavailableDetails, options?: { cause?: unknown }) {
    const lines = details.attempts.map((a) => `  - ${a.path} (${a.origin}): ${a.failure}`);
    super(
      `${summary}\nTried:\n${lines.join('\n')}\nSet ${details.envVariable} to the library's path to choose it explicitly.${details.hint ? `\n${details.hint}` : ''}`,
      options,
    );
    this.api = details.api;
    this.attempts = details.attempts;
    this.envVariable = details.envVariable;
    if (details.status !== undefined) this.status = details.status;
    if (details.loadedPath !== undefined) this.loadedPath = details.loadedPath;
    if (details.hint !== undefined) this.hint = details.hint;
    Object.defineProperty(this, UNAVAILABLE_MARKER, { value: true, enumerable: false });
  }

  static override isInstance(value: unknown): value is CudaUnavailableError {
    return (
      UnsupportedError.isInstance(value) &&
      (value as unknown as Record<symbol, unknown>)[UNAVAILABLE_MARKER] === true
    );
  }
}
