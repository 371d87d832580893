/**
 * What the web app shows of each trace beside the report, read from the report's own data: the
 * what-if's row (the caching row with the what-if's setting) against the recording, for the
 * peaks, the comparison of two snapshots and a job's ranks.
 */
import type { RowData, WorkloadData } from './report-data';

/** One caching row, in brief. */
export interface RowBrief {
  readonly allocator: string;
  /** Its canonical `PYTORCH_CUDA_ALLOC_CONF`. */
  readonly config: string;
  readonly peakReservedBytes: number;
  readonly failures: number;
  /** Segment allocations (and maps of expandable segments) in the window. */
  readonly segmentCalls: number;
}

/** A trace under a what-if, against its recording. */
export interface TraceBrief {
  readonly id: string;
  readonly title: string;
  readonly events: number;
  /** The recording's own settings, or null when it does not state them. */
  readonly recordedConfig: string | null;
  /** PyTorch's own peak reserved bytes in the recording, when it states them. */
  readonly recordedPeakReservedBytes: number | null;
  /** The row with the recording's settings (PyTorch's defaults where it states none). */
  readonly recorded: RowBrief | null;
  /** The row with the what-if's settings (the recorded row when they are the same). */
  readonly whatIf: RowBrief;
}

function brief(row: RowData): RowBrief {
  return {
    allocator: row.allocator,
    config: row.config ?? '',
    peakReservedBytes: row.peakReservedBytes,
    failures: row.failures,
    segmentCalls: row.segments ? row.segments.acquired + row.segments.grown : 0,
  };
}

/** `workload` under the what-if whose canonical `PYTORCH_CUDA_ALLOC_CONF` is `config`. */
export function traceBrief(workload: WorkloadData, config: string): TraceBrief {
  const rows = workload.rows.map(brief);
  const recorded = rows.find((row) => row.allocator === workload.recorded.row) ?? null;
  return {
    id: workload.id,
    title: workload.title,
    events: workload.events,
    recordedConfig: workload.recorded.config,
    recordedPeakReservedBytes: workload.recorded.peakReservedBytes,
    recorded,
    whatIf:
      (recorded?.config === config ? recorded : undefined) ??
      rows.find((row) => row.config === config) ??
      rows[rows.length - 1]!,
  };
}
