/**
 * The out-of-memory message PyTorch users know, with our source and pool in place of the GPU and
 * PyTorch. Sizes are written the way PyTorch's `format_size` writes them.
 */

const KIB = 1024;
const MIB = 1024 * 1024;
const GIB = 1024 * 1024 * 1024;

/** PyTorch's `format_size`: `512 bytes`, `1.50 KiB`, `20.00 MiB`, `2.00 GiB`. */
export function formatSize(bytes: number): string {
  if (bytes <= KIB) return `${bytes} bytes`;
  if (bytes <= MIB) return `${(bytes / KIB).toFixed(2)} KiB`;
  if (bytes <= GIB) return `${(bytes / MIB).toFixed(2)} MiB`;
  return `${(bytes / GIB).toFixed(2)} GiB`;
}

/** Figures of the message. Bytes. */
export interface OutOfMemoryFigures {
  /** Kind of the source (`host`, `cuda-device`, ...). */
  readonly sourceKind: string;
  /** Size of the segment the pool tried to obtain (PyTorch reports this, not the request). */
  readonly allocationSize: number;
  /** Total memory of the source; `Infinity` when not stated. */
  readonly totalMemory: number;
  /** Bytes the pool may reserve under a memory fraction; `Infinity` without one. */
  readonly allowedMemory: number;
  /** Bytes reserved from the source. */
  readonly reservedBytes: number;
  /** Bytes of live blocks outside private pools. */
  readonly allocatedBytes: number;
  /** Bytes of live blocks in private pools. */
  readonly privateAllocatedBytes: number;
}

/** The message, in PyTorch's order and wording. */
export function outOfMemoryMessage(f: OutOfMemoryFigures): string {
  const capacity =
    f.totalMemory === Number.POSITIVE_INFINITY
      ? `The ${f.sourceKind} source states no total capacity; it refused more memory. `
      : `The ${f.sourceKind} source has a total capacity of ${formatSize(f.totalMemory)} of which ` +
        `${formatSize(Math.max(0, f.totalMemory - f.reservedBytes))} is free. `;
  const allowed =
    f.allowedMemory === Number.POSITIVE_INFINITY ? '' : `${formatSize(f.allowedMemory)} allowed; `;
  const privatePools =
    f.privateAllocatedBytes > 0
      ? `with ${formatSize(f.privateAllocatedBytes)} allocated in private pools, `
      : '';
  const unallocated = f.reservedBytes - f.allocatedBytes - f.privateAllocatedBytes;
  return (
    `Out of memory. Tried to allocate ${formatSize(f.allocationSize)}. ${capacity}${allowed}` +
    `Of the allocated memory ${formatSize(f.allocatedBytes + f.privateAllocatedBytes)} is allocated ` +
    `by the pool, ${privatePools}and ${formatSize(unallocated)} is reserved by the pool but ` +
    'unallocated. If reserved but unallocated memory is large try setting ' +
    'ALLOT_ALLOC_CONF=expandable_segments:True to avoid fragmentation.'
  );
}
