/**
 * The error the trace readers and the trace builder throw on malformed input. It carries where the
 * problem is (source name, 1-based line or event number) and what was expected, so a user can fix a
 * trace file without reading this package's source.
 */
import { AllotError } from '@allot/core';

/** Stable code of {@link TraceFormatError}. */
export const TRACE_FORMAT_ERROR_CODE = 'ALLOT_TRACE_FORMAT';

/** Malformed trace input: a line that does not parse, or an event that breaks the trace's rules. */
export class TraceFormatError extends AllotError {
  static readonly code = TRACE_FORMAT_ERROR_CODE;
  /** File name or label of the input. */
  readonly source: string;
  /** 1-based line (text formats) or event number (built traces) where the problem is. */
  readonly line: number;
  /** What the reader expected there. */
  readonly expected: string;
  /** What it found (truncated to 80 characters). */
  readonly found: string;

  constructor(source: string, line: number, expected: string, found: string) {
    const shown = found.length > 80 ? `${found.slice(0, 77)}...` : found;
    super(TRACE_FORMAT_ERROR_CODE, `${source}:${line}: expected ${expected}, found ${shown}`);
    this.source = source;
    this.line = line;
    this.expected = expected;
    this.found = shown;
  }
}
