/**
 * The error a pickle read ends in: malformed input, an opcode that would run Python code, or input
 * past a limit. It says where (the input's name and the byte offset of the opcode at fault), what
 * was expected there and what was found. A reader with errors of its own (a trace reader's) gives
 * the machine a factory of them instead.
 */
import { AllotError } from '@allot/core';

/** Stable code of {@link PickleError}. */
export const PICKLE_ERROR_CODE = 'ALLOT_PICKLE';

/** Makes the error of a failed read at byte `offset`. */
export type PickleErrorFactory = (offset: number, expected: string, found: string) => Error;

/** A pickle that cannot be read, or may not be (see the module comment). */
export class PickleError extends AllotError {
  static readonly code = PICKLE_ERROR_CODE;
  /** The input's name. */
  readonly source: string;
  /** Byte offset of the opcode at fault. */
  readonly offset: number;
  /** What the reader expected there. */
  readonly expected: string;
  /** What it found (truncated to 80 characters). */
  readonly found: string;

  constructor(source: string, offset: number, expected: string, found: string) {
    const shown = found.length > 80 ? `${found.slice(0, 77)}...` : found;
    super(
      PICKLE_ERROR_CODE,
      `${source}: byte offset ${offset}: expected ${expected}, found ${shown}`,
    );
    this.source = source;
    this.offset = offset;
    this.expected = expected;
    this.found = shown;
  }
}

/** The factory of {@link PickleError}s for the input named `source`. */
export function pickleErrors(source: string): PickleErrorFactory {
  return (offset, expected, found) => new PickleError(source, offset, expected, found);
}
