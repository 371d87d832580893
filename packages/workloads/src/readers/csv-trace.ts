/**
 * Reader and writer of the plain CSV trace format: one event per line, `op,id,size[,alignment]`.
 *
 * ```
 * op,id,size,alignment      optional header (recognised by its first field, `op`)
 * alloc,a17,4096,256        allocate 4096 bytes aligned to 256 for the block named `a17`
 * alloc,7,100               alignment omitted: the allocator's default
 * free,a17                  free it (size and alignment may be given; they are not checked)
 * ```
 *
 * Rules: ids are any non-empty text without commas (numbers, pointers, names) and may be reused
 * once their block is freed; `op` is `alloc` or `free` (case-insensitive); size is a positive
 * integer; alignment is 0 or a power of two. Blank lines and lines starting with `#` are skipped.
 */
import { TraceFormatError } from '../errors';
import { EventKind, type Trace, TraceBuilder } from '../trace';
import type { ParseTraceOptions } from './malloc-trace';

const INTEGER = /^\d+$/;

/**
 * Parses a CSV trace.
 *
 * @throws TraceFormatError naming the line and what was expected.
 */
export function parseCsvTrace(text: string, options: ParseTraceOptions = {}): Trace {
  const name = options.name ?? 'trace';
  const builder = new TraceBuilder(name, options.maxEvents);
  const live = new Map<string, number>();
  let lineNumber = 0;
  let start = 0;
  let firstRow = true;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    lineNumber++;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(',').map((field) => field.trim());
    const op = fields[0]!.toLowerCase();
    if (firstRow && op === 'op') {
      firstRow = false;
      continue;
    }
    firstRow = false;
    const fail = (expected: string, found: string): never => {
      throw new TraceFormatError(name, lineNumber, expected, found);
    };
    if (fields.length < 2 || fields.length > 4) {
      fail(
        '`op,id,size[,alignment]` (2 to 4 fields)',
        `${fields.length} fields: ${JSON.stringify(line)}`,
      );
    }
    const id = fields[1]!;
    if (id === '') fail('a non-empty id', 'an empty field');
    if (op === 'alloc') {
      const sizeText = fields[2] ?? '';
      if (
        !INTEGER.test(sizeText) ||
        Number(sizeText) <= 0 ||
        !Number.isSafeInteger(Number(sizeText))
      ) {
        fail('a positive integer size in bytes', JSON.stringify(sizeText));
      }
      const alignText = fields[3] ?? '0';
      const alignment = Number(alignText);
      const isPow2 = alignment > 0 && 2 ** Math.round(Math.log2(alignment)) === alignment;
      if (!INTEGER.test(alignText) || (alignment !== 0 && !isPow2) || alignment > 0x8000_0000) {
        fail('an alignment that is 0 or a power of two up to 2^31', JSON.stringify(alignText));
      }
      if (live.has(id)) fail(`a new id or one whose block was freed`, `id ${id}, still live`);
      live.set(id, builder.alloc(Number(sizeText), alignment));
    } else if (op === 'free') {
      const block = live.get(id);
      if (block === undefined) fail('the id of a live block', `id ${id}, not live`);
      builder.free(block!);
      live.delete(id);
    } else {
      fail('op `alloc` or `free`', JSON.stringify(fields[0]));
    }
  }
  return builder.build(name, { format: 'csv', source: name });
}

/** Writes `trace` as CSV with a header; block ids become the ids; the alignment column only when used. */
export function formatCsvTrace(trace: Trace): string {
  let aligned = false;
  for (let i = 0; i < trace.length && !aligned; i++) aligned = trace.alignment[i] !== 0;
  const lines: string[] = [aligned ? 'op,id,size,alignment' : 'op,id,size'];
  for (let i = 0; i < trace.length; i++) {
    const id = trace.id[i];
    if (trace.kind[i] === EventKind.Free) lines.push(`free,${id}`);
    else if (aligned) lines.push(`alloc,${id},${trace.size[i]},${trace.alignment[i]}`);
    else lines.push(`alloc,${id},${trace.size[i]}`);
  }
  return `${lines.join('\n')}\n`;
}
