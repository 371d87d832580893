/**
 * The lab's one error boundary: every failure becomes an exit status and one line on stderr.
 *
 * ```
 *  error ─► caused by the input or the options?  ─ yes ─► exit 2, one line naming the file and
 *           (UsageError, TraceFormatError, any       │      the line, event or byte offset
 *            AllotError, a file-system error,        │
 *            a RangeError from an input too big)     └ no ─► exit 3: a bug, said so on one line
 *                                                          --debug adds the stack to either
 * ```
 *
 * Exit 1 is not decided here: it means the run completed and allocations failed.
 */
import { AllotError } from '@allot/core';
import { EXIT_BAD_INPUT, UsageError } from './options';

/** A bug in the lab: neither the input nor the options explain the failure. */
export const EXIT_BUG = 3;

/** What a file-system error code means, for a person. */
const FILE_ERRORS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or folder',
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EEXIST: 'a file of that name is in the way',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENAMETOOLONG: 'the name is too long',
  ELOOP: 'too many symbolic links',
  EMFILE: 'too many open files',
  ENXIO: 'no such device',
  ENODEV: 'no such device',
  EIO: 'input/output error',
  EINVAL: 'invalid argument (not a readable file)',
  EAGAIN: 'the file would block (not a regular file)',
};

const MAX_LINE = 600;

/** What a file-system error means (`no such file or folder (ENOENT)`), or null for another error. */
export function fileErrorMeaning(error: unknown): string | null {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const meaning = typeof code === 'string' ? FILE_ERRORS[code] : undefined;
  return meaning === undefined ? null : `${meaning} (${code})`;
}

/** `text` on one line, shortened to a length a terminal shows. */
function oneLine(text: string): string {
  const flat = text.replace(/\s*\n\s*/g, ' ').trim();
  return flat.length > MAX_LINE ? `${flat.slice(0, MAX_LINE - 3)}...` : flat;
}

/** The message of a failure the input or the options caused, or null for a bug. */
export function inputFailureMessage(error: unknown): string | null {
  if (error instanceof UsageError) return error.message;
  if (AllotError.isInstance(error)) return (error as Error).message;
  if (error instanceof Error) {
    const errno = error as NodeJS.ErrnoException;
    const meaning = fileErrorMeaning(errno);
    if (meaning !== null) return `cannot write ${errno.path ?? 'a file'}: ${meaning}`;
    if (error instanceof RangeError) {
      return `the input is too large or too deeply nested to process (${error.message})`;
    }
  }
  return null;
}

/**
 * Reports `error` on `stderr` and returns the exit status: 2 for a failure the input or the
 * options caused, 3 for a bug. The stack follows only with `debug`.
 */
export function reportFailure(
  error: unknown,
  stderr: NodeJS.WritableStream,
  debug: boolean,
): number {
  const input = inputFailureMessage(error);
  const stack = debug && error instanceof Error && error.stack ? `${error.stack}\n` : '';
  if (input !== null) {
    stderr.write(`allot-lab: ${oneLine(input)}\n${stack}`);
    return EXIT_BAD_INPUT;
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  stderr.write(
    `allot-lab: internal error, a bug in allot-lab: ${oneLine(message)}${debug ? '' : ' (run again with --debug for the stack)'}\n${stack}`,
  );
  return EXIT_BUG;
}

/**
 * `error` with the files it concerns: a typed error from a replay (a capacity or size no allocator
 * takes) names no file by itself. Other errors come back as they are.
 */
export function inFiles(error: unknown, files: readonly string[]): unknown {
  if (files.length === 0 || !AllotError.isInstance(error)) return error;
  if ((error as { code?: string }).code === 'ALLOT_TRACE_FORMAT') return error;
  return new UsageError(
    `${files.join(', ')}: cannot be replayed as asked: ${(error as Error).message} ` +
      '(sizes near 2^53 bytes fit no range: try --allocators caching, or --capacity)',
  );
}
