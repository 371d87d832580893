/**
 * What a recording's out-of-memory errors ask of a replay: the request PyTorch could not serve, at
 * its place among the events (the recording holds no allocation for it). The wall it hit is
 * `device.ts`'s `oomWall`.
 */
import type { Trace } from '@allot/workloads';

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
