/**
 * Reader and writer of the malloc trace format of `../shared/traces/malloc-real-programs/`
 * (recorded with valgrind's `--trace-malloc=yes`): one event per line,
 *
 * ```
 * Alloc(552),     allocate 552 bytes; the k-th Alloc line (from 0) creates block k
 * Free(1),        free block 1
 * ```
 *
 * Rules: surrounding whitespace and blank lines are ignored, the trailing comma is optional.
 * `Alloc(0)` (C's `malloc(0)`, which returns a unique pointer that must be freed) becomes a 1-byte
 * request, so that every `Free(k)` still finds its block; `meta.zeroSizeAllocs` counts them.
 * A `Free` of a block that was never allocated or is already free is an error.
 */
import { TraceFormatError } from '../errors';
import { EventKind, type Trace, TraceBuilder } from '../trace';

const LINE = /^\s*(Alloc|Free)\((\d+)\),?\s*$/;
const EXPECTED = '`Alloc(<bytes>),` or `Free(<index>),`';

/** Options of {@link parseMallocTrace}. */
export interface ParseTraceOptions {
  /** Name of the resulting trace and label in error messages. @defaultValue 'trace' */
  readonly name?: string;
  /** Most events; one more throws TraceFormatError. @defaultValue DEFAULT_MAX_EVENTS (10 M) */
  readonly maxEvents?: number;
}

/**
 * Parses the text of a malloc trace.
 *
 * @throws TraceFormatError naming the line and what was expected, for a malformed line or a free
 * of a block that is not live.
 */
export function parseMallocTrace(text: string, options: ParseTraceOptions = {}): Trace {
  const name = options.name ?? 'trace';
  const builder = new TraceBuilder(name, options.maxEvents);
  let zeroSizeAllocs = 0;
  let lineNumber = 0;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    lineNumber++;
    const line = text.slice(start, end);
    start = end + 1;
    if (line.trim() === '') continue;
    const match = LINE.exec(line);
    if (!match) throw new TraceFormatError(name, lineNumber, EXPECTED, JSON.stringify(line));
    const value = Number(match[2]);
    if (!Number.isSafeInteger(value)) {
      throw new TraceFormatError(name, lineNumber, 'a number below 2^53', match[2]!);
    }
    if (match[1] === 'Alloc') {
      if (value === 0) zeroSizeAllocs++;
      builder.alloc(value === 0 ? 1 : value);
    } else {
      if (!builder.isLive(value)) {
        const state = value < builder.allocCount ? 'already freed' : 'not allocated yet';
        throw new TraceFormatError(
          name,
          lineNumber,
          `Free(k) of a live block (k < ${builder.allocCount}, not freed before)`,
          `Free(${value}): block ${value} is ${state}`,
        );
      }
      builder.free(value);
    }
  }
  return builder.build(name, { format: 'malloc', source: name, zeroSizeAllocs });
}

/**
 * Writes `trace` in the malloc trace format. Alignments are dropped (the format has none); block
 * ids are already alloc indices, so `Free(k)` refers to them directly.
 */
export function formatMallocTrace(trace: Trace): string {
  const lines: string[] = new Array(trace.length);
  for (let i = 0; i < trace.length; i++) {
    lines[i] =
      trace.kind[i] === EventKind.Alloc ? `Alloc(${trace.size[i]}),` : `Free(${trace.id[i]}),`;
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
