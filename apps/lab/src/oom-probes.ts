/**
 * What a recording's out-of-memory errors ask of a replay: the request PyTorch could not serve, at
 * its place among the events (the recording holds no allocation for it), and the wall it hit.
 */
import type { Trace } from '@allot/workloads';
import type { DeviceModel } from './pool-instance';

/** A request a recording's `oom` entry names, to ask for before trace event `event`. */
export interface OomProbe {
  /** Trace event the request came before (its index in the built trace). */
  readonly event: number;
  /** The stream as the trace's events number them. */
  readonly stream: number;
  readonly sizeBytes: number;
}

/** The requests of `trace`'s recorded out-of-memory errors that can be asked again, in order. */
export function oomProbes(trace: Trace): readonly OomProbe[] {
  const probes: OomProbe[] = [];
  for (const oom of trace.recordedOoms ?? []) {
    if (!(Number.isSafeInteger(oom.sizeBytes) && oom.sizeBytes > 0)) continue;
    probes.push({
      event: oom.event,
      stream: Math.max(0, oom.streamIndex),
      sizeBytes: oom.sizeBytes,
    });
  }
  return probes;
}

/**
 * The memory PyTorch could use when it first ran out (reserved plus the driver's `device_free`), or
 * undefined when the recording holds no out-of-memory error with a valid `device_free`.
 */
export function oomWall(trace: Trace): number | undefined {
  return trace.recordedOoms?.find((oom) => oom.capacityBytes !== undefined)?.capacityBytes;
}

/**
 * The device a recording's rows replay on: `stated` when `--memory` gives one, else the wall of its
 * first out-of-memory error, else `stated` as it is (no limit unless stated).
 */
export function recordedDevice(
  trace: Trace,
  stated: DeviceModel | undefined,
): DeviceModel | undefined {
  if (stated !== undefined && stated.memory !== null) return stated;
  const wall = oomWall(trace);
  return wall === undefined ? stated : { memory: wall, fraction: null };
}
