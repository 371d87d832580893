/**
 * Typed errors with stable codes. `isInstance` checks a `Symbol.for` marker and the code, so it works
 * across duplicated copies of this package (where `instanceof` does not).
 */
import { formatBytes } from './format';

const MARKER = Symbol.for('@allot/core/error');

export const ErrorCode = {
  OutOfMemory: 'ALLOT_OUT_OF_MEMORY',
  InvalidFree: 'ALLOT_INVALID_FREE',
  InvalidArgument: 'ALLOT_INVALID_ARGUMENT',
  Unsupported: 'ALLOT_UNSUPPORTED',
} as const;

function hasMarker(value: unknown): value is AllotError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[MARKER] === true &&
    typeof (value as { code?: unknown }).code === 'string'
  );
}

/** Base class of every error allot throws. Subpackages extend it with codes of their own. */
export class AllotError extends Error {
  /** Stable machine-readable code, for example `ALLOT_OUT_OF_MEMORY`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    // Bundlers rename a class that refers to itself (`class _OutOfMemoryError`): keep the
    // documented name in every build.
    this.name = new.target.name.replace(/^_+/, '');
    Object.defineProperty(this, MARKER, { value: true, enumerable: false });
  }

  /** Whether `value` is an allot error (from any copy of this package). */
  static isInstance(value: unknown): value is AllotError {
    return hasMarker(value);
  }
}

/** Why an allocation could not be served. */
export type OutOfMemoryReason = 'fragmentation' | 'exhaustion';

export interface OutOfMemoryDetails {
  /** Bytes requested. */
  readonly requested: number;
  /** Alignment requested, in bytes. */
  readonly alignment: number;
  /** Bytes the allocator manages (or may reserve, for a pool). */
  readonly capacity: number;
  /** Bytes free at the time of failure. */
  readonly freeBytes: number;
  /** Largest free block at the time of failure. */
  readonly largestFreeBlock: number;
  /** Overrides the computed reason (a pool that may still grow knows better). */
  readonly reason?: OutOfMemoryReason;
  /** Extra lines for the message (a pool's figures, a hint). */
  readonly detail?: string;
  /** Structured diagnosis attached by `@allot/stats` or a pool. */
  readonly diagnosis?: unknown;
}

/**
 * Fragmentation when the free bytes would hold the request but no free block can; exhaustion
 * when there are simply not enough free bytes.
 */
export function classifyOutOfMemory(requested: number, freeBytes: number): OutOfMemoryReason {
  return freeBytes >= requested ? 'fragmentation' : 'exhaustion';
}

export class OutOfMemoryError extends AllotError implements OutOfMemoryDetails {
  static readonly code = ErrorCode.OutOfMemory;
  readonly requested: number;
  readonly alignment: number;
  readonly capacity: number;
  readonly freeBytes: number;
  readonly largestFreeBlock: number;
  readonly reason: OutOfMemoryReason;
  readonly detail?: string;
  readonly diagnosis?: unknown;

  constructor(details: OutOfMemoryDetails, options?: { cause?: unknown }) {
    const reason = details.reason ?? classifyOutOfMemory(details.requested, details.freeBytes);
    super(ErrorCode.OutOfMemory, OutOfMemoryError.describe(details, reason), options);
    this.requested = details.requested;
    this.alignment = details.alignment;
    this.capacity = details.capacity;
    this.freeBytes = details.freeBytes;
    this.largestFreeBlock = details.largestFreeBlock;
    this.reason = reason;
    if (details.detail !== undefined) this.detail = details.detail;
    if (details.diagnosis !== undefined) this.diagnosis = details.diagnosis;
  }

  static override isInstance(value: unknown): value is OutOfMemoryError {
    return hasMarker(value) && value.code === ErrorCode.OutOfMemory;
  }

  private static describe(d: OutOfMemoryDetails, reason: OutOfMemoryReason): string {
    const head =
      `Out of memory: requested ${formatBytes(d.requested)} (alignment ${d.alignment}); ` +
      `capacity ${formatBytes(d.capacity)}, ${formatBytes(d.freeBytes)} free, ` +
      `largest free block ${formatBytes(d.largestFreeBlock)}.`;
    const why =
      reason === 'fragmentation'
        ? ' Fragmentation: enough bytes are free, but no free block is large enough.'
        : ' Exhaustion: fewer bytes are free than were requested.';
    return head + why + (d.detail ? `\n${d.detail}` : '');
  }
}

/** Why a free was refused. */
export type InvalidFreeReason =
  /** The address is the start of a block that is already free. */
  | 'double-free'
  /** The address lies inside a live block but is not its start. */
  | 'interior-pointer'
  /** The address lies outside everything this allocator manages. */
  | 'foreign-address'
  /** The address lies in this allocator's range but is not the start of a live block. */
  | 'not-live';

export class InvalidFreeError extends AllotError {
  static readonly code = ErrorCode.InvalidFree;
  readonly address: number;
  readonly reason: InvalidFreeReason;

  constructor(address: number, reason: InvalidFreeReason = 'not-live', context?: string) {
    const where = Number.isFinite(address) ? `0x${address.toString(16)}` : String(address);
    super(
      ErrorCode.InvalidFree,
      `Invalid free of ${where}: ${InvalidFreeError.explain(reason)}${context ? ` (${context})` : ''}.`,
    );
    this.address = address;
    this.reason = reason;
  }

  static override isInstance(value: unknown): value is InvalidFreeError {
    return hasMarker(value) && value.code === ErrorCode.InvalidFree;
  }

  private static explain(reason: InvalidFreeReason): string {
    switch (reason) {
      case 'double-free':
        return 'the block is already free (double free)';
      case 'interior-pointer':
        return 'the address points inside a live block, not at its start';
      case 'foreign-address':
        return 'the address does not belong to this allocator';
      case 'not-live':
        return 'no live block starts at this address';
    }
  }
}

export class InvalidArgumentError extends AllotError {
  static readonly code = ErrorCode.InvalidArgument;
  /** Name of the offending argument or option (`size`, `alignment`, `max_split_size_mb`, ...). */
  readonly argument: string;
  readonly value: unknown;

  constructor(argument: string, value: unknown, expectation: string) {
    super(
      ErrorCode.InvalidArgument,
      `Invalid ${argument}: ${describeValue(value)}; expected ${expectation}.`,
    );
    this.argument = argument;
    this.value = value;
  }

  static override isInstance(value: unknown): value is InvalidArgumentError {
    return hasMarker(value) && value.code === ErrorCode.InvalidArgument;
  }
}

/** An operation the platform or backend cannot do here (NUMA off Linux, no CUDA driver, ...). */
export class UnsupportedError extends AllotError {
  static readonly code = ErrorCode.Unsupported;

  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.Unsupported, message, options);
  }

  static override isInstance(value: unknown): value is UnsupportedError {
    return hasMarker(value) && value.code === ErrorCode.Unsupported;
  }
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number' || typeof value === 'boolean' || value == null)
    return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
