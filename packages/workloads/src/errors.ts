/**
 * The error the trace readers and the trace builder throw on malformed input. It carries where the
 * problem is (source name, 1-based line or event number) and what was expected, so a user can fix a
 * trace file without reading this package's source.
 */
import { AllotError } from '@allot/core';

/** Stable code of {@link TraceFormatError}. */
export const TRACE_FORMAT_ERROR_CODE = 'ALLOT_TRACE_FORMAT';

/**
 * What {@link TraceFormatError.line} counts: a 1-based line of a text file, a 1-based event of a
 * trace or of a JSON event list, or a 0-based byte offset of a binary file (a pickle).
 */
export type TraceLocationUnit = 'line' | 'event' | 'byte';

function locate(source: string, line: number, unit: TraceLocationUnit): string {
  if (unit === 'line') return `${source}:${line}`;
  return `${source}: ${unit === 'event' ? 'event' : 'byte offset'} ${line}`;
}

/** Malformed trace input: a line that does not parse, or an event that breaks the trace's rules. */
export class TraceFormatError extends AllotError {
  static readonly code = TRACE_FORMAT_ERROR_CODE;
  /** File name or label of the input. */
  readonly source: string;
  /** Where the problem is: a 1-based line or event number, or a byte offset (see {@link unit}). */
  readonly line: number;
  /** What {@link line} counts. @defaultValue 'line' */
  readonly unit: TraceLocationUnit;
  /** What the reader expected there. */
  readonly expected: string;
  /** What it found (truncated to 80 characters). */
  readonly found: string;

  constructor(
    source: string,
    line: number,
    expected: string,
    found: string,
    unit: TraceLocationUnit = 'line',
  ) {
    const shown = found.length > 80 ? `${found.slice(0, 77)}...` : found;
    super(
      TRACE_FORMAT_ERROR_CODE,
      `${locate(source, line, unit)}: expected ${expected}, found ${shown}`,
    );
    this.source = source;
    this.line = line;
    this.unit = unit;
    this.expected = expected;
    this.found = shown;
  }
}
