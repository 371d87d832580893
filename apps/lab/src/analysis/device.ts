/**
 * The GPU a question is answered on: its memory and the per-process fraction, decided here for
 * every command, the report and the web app.
 *
 * ```
 *  replay  memory: --memory, else the card and fraction the recording states (a recorder's
 *          sidecar), else the wall of the recording's first out-of-memory error (reserved +
 *          device_free), else none (no limit: the replay asks what PyTorch reserves)
 *  search  memory: --memory, else the card the recording states (a profiler trace's
 *          total_memory, a recorder's sidecar), else that wall, else ASSUMED_MEMORY (a search
 *          rules out settings that fail, so it needs a card); where the figure came from goes
 *          with it
 *  both    fraction: --fraction, else the one the recording states, else none
 * ```
 *
 * PyTorch caps reserved memory at `memory × fraction` and runs `garbage_collection_threshold`
 * against that cap only when a fraction is set (`set_fraction` in `CUDACachingAllocator.cpp`);
 * without one, only the device's memory limits `cudaMalloc`.
 */
import type { Trace } from '@allot/workloads';

/** A GPU as a pool row models it. */
export interface DeviceModel {
  /** Total device memory in bytes, or null for no limit. */
  readonly memory: number | null;
  /** Per-process memory fraction in (0, 1], or null when none is set. */
  readonly fraction: number | null;
}

/** No limit and no fraction: what a pool row gets unless told otherwise. */
export const UNLIMITED_DEVICE: DeviceModel = { memory: null, fraction: null };

/** The card a search assumes when neither the user nor the trace states one: 80 GiB. */
export const ASSUMED_MEMORY = 80 * 2 ** 30;

/** Where a search's memory figure came from. */
export type DeviceOrigin = 'stated' | 'recorded' | 'assumed';

/** The device of a search: always a memory figure, and its origin. */
export interface SearchDevice {
  readonly device: DeviceModel & { readonly memory: number };
  readonly origin: DeviceOrigin;
}

/**
 * The memory PyTorch could use when it first ran out (reserved plus the driver's `device_free`), or
 * undefined when the recording holds no out-of-memory error with a valid `device_free`.
 */
export function oomWall(trace: Trace): number | undefined {
  return trace.recordedOoms?.find((oom) => oom.capacityBytes !== undefined)?.capacityBytes;
}

/** The card's memory in bytes as the recording states it (profiler traces, sidecars), or null. */
export function recordedCard(trace: Trace): number | null {
  const bytes = trace.meta.deviceMemoryBytes;
  return typeof bytes === 'number' && bytes > 0 ? bytes : null;
}

/** The per-process memory fraction the recording states (a recorder's sidecar), or null. */
export function recordedFraction(trace: Trace): number | null {
  const fraction = trace.meta.memoryFraction;
  return typeof fraction === 'number' && fraction > 0 && fraction < 1 ? fraction : null;
}

/**
 * The card and per-process fraction a job ran under, when its recording states both: PyTorch
 * capped its pool at `floor(fraction × memory)`, however much of the device was free.
 */
export function recordedDevice(trace: Trace): (DeviceModel & { readonly memory: number }) | null {
  const memory = recordedCard(trace);
  const fraction = recordedFraction(trace);
  return memory !== null && fraction !== null ? { memory, fraction } : null;
}

/** The bytes a device lets a pool reserve: its memory, times its fraction when one is set. */
export function deviceCap(device: DeviceModel): number | null {
  if (device.memory === null) return null;
  return device.fraction === null ? device.memory : Math.floor(device.memory * device.fraction);
}

/** The device `trace`'s rows replay on, given what was `stated` (see the module comment). */
export function replayDevice(trace: Trace, stated: DeviceModel = UNLIMITED_DEVICE): DeviceModel {
  if (stated.memory !== null) return stated;
  const recorded = recordedDevice(trace);
  if (recorded !== null) return recorded;
  const wall = oomWall(trace);
  return wall === undefined ? stated : { memory: wall, fraction: null };
}

/** The device a search of settings on `trace` runs on (see the module comment). */
export function searchDevice(
  trace: Trace,
  stated: { readonly memory?: number | null; readonly fraction?: number | null },
): SearchDevice {
  const fraction = stated.fraction ?? recordedFraction(trace);
  if (stated.memory != null)
    return { device: { memory: stated.memory, fraction }, origin: 'stated' };
  const recorded = recordedCard(trace) ?? oomWall(trace);
  return recorded !== undefined && recorded > 0
    ? { device: { memory: recorded, fraction }, origin: 'recorded' }
    : { device: { memory: ASSUMED_MEMORY, fraction }, origin: 'assumed' };
}

/** A search's device in words: its per-process fraction, and where its figures came from. */
export function describeDevice({ device, origin }: SearchDevice): {
  fraction: string;
  origin: string;
} {
  return {
    fraction:
      device.fraction === null
        ? 'no per-process memory fraction'
        : `per-process memory fraction ${device.fraction}`,
    origin:
      origin === 'assumed'
        ? 'assumed: state yours with --memory and --fraction'
        : origin === 'recorded'
          ? 'as the trace records it'
          : 'as stated',
  };
}
