/**
 * Reader and writer of the CSV log of RMM's `logging_resource_adaptor` (the input of RMM's own
 * `replay_benchmark`):
 *
 * ```
 * Thread,Time,Action,Pointer,Size,Stream
 * 140202520590080,08:35:12:145987,allocate,0x7f8312000000,4096,0x0
 * 140202520590080,08:35:12:146012,free,0x7f8312000000,4096,0x0
 * ```
 *
 * Rules: the header names the six columns (in any case, surrounding spaces ignored); `Action` is
 * `allocate`, `free` or `allocate failure` (logged by newer RMM when the upstream throws; skipped and
 * counted in `meta.failedInLog`); `Pointer` is hex (`0x…`) or decimal; `Size` a positive integer;
 * `Stream` any text, mapped to dense stream ids. Rows are replayed in file order. A free of a pointer
 * allocated before the log began is modelled as live from the start.
 */
import { TraceFormatError } from '../errors';
import { EventKind, type Trace } from '../trace';
import type { ParseTraceOptions } from './malloc-trace';
import { ALLOC, FREE, PointerTrace } from './pointer-trace';
import { parseAddress } from './recorded-values';

/** The header RMM writes. */
export const RMM_LOG_HEADER = 'Thread,Time,Action,Pointer,Size,Stream';

const COLUMNS = RMM_LOG_HEADER.toLowerCase().split(',');

/**
 * Parses an RMM log.
 *
 * @throws TraceFormatError naming the line and what was expected.
 */
export function parseRmmLog(text: string, options: ParseTraceOptions = {}): Trace {
  const name = options.name ?? 'rmm-log';
  const events = new PointerTrace(name, 'line', options.maxEvents);
  const streams = new Map<string, number>();
  let lineNumber = 0;
  let start = 0;
  let header = false;
  let failedInLog = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    lineNumber++;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line === '') continue;
    const fields = line.split(',').map((field) => field.trim());
    const fail = (expected: string, found: string): never => {
      throw new TraceFormatError(name, lineNumber, expected, found);
    };
    if (!header) {
      const names = fields.map((field) => field.toLowerCase());
      if (names.length !== COLUMNS.length || names.some((field, i) => field !== COLUMNS[i])) {
        fail(`the header \`${RMM_LOG_HEADER}\``, JSON.stringify(line));
      }
      header = true;
      continue;
    }
    if (fields.length !== COLUMNS.length) {
      fail(`6 fields (${RMM_LOG_HEADER})`, `${fields.length} fields: ${JSON.stringify(line)}`);
    }
    const action = fields[2]!.toLowerCase();
    if (action === 'allocate failure') {
      failedInLog++;
      continue;
    }
    if (action !== 'allocate' && action !== 'free') {
      fail('Action `allocate`, `free` or `allocate failure`', JSON.stringify(fields[2]));
    }
    const address = parseAddress(fields[3]);
    if (Number.isNaN(address)) fail('a Pointer in hex (0x…) or decimal', JSON.stringify(fields[3]));
    const sizeText = fields[4]!;
    const size = /^\d+$/.test(sizeText) ? Number(sizeText) : Number.NaN;
    if (!Number.isSafeInteger(size) || size <= 0) {
      fail('a positive integer Size in bytes', JSON.stringify(sizeText));
    }
    // Streams are named by any text: numbered as they come (the trace makes them dense).
    let stream = streams.get(fields[5]!);
    if (stream === undefined) streams.set(fields[5]!, (stream = streams.size));
    events.add(action === 'allocate' ? ALLOC : FREE, address, size, stream, lineNumber);
  }
  if (!header) throw new TraceFormatError(name, 1, `the header \`${RMM_LOG_HEADER}\``, 'nothing');
  events.settle();
  return events.finish(name, { format: 'rmm', source: name, failedInLog });
}

/**
 * Writes `trace` as an RMM log: block k at the synthetic pointer `0x7f0000000000 + k × 4096`, on one
 * thread, 7 µs apart (fixtures and round trips).
 */
export function formatRmmLog(trace: Trace): string {
  const lines = [RMM_LOG_HEADER];
  const pointer = (block: number) => `0x${(0x7f00_0000_0000 + block * 0x1000).toString(16)}`;
  for (let i = 0; i < trace.length; i++) {
    const micros = i * 7;
    const time = `00:00:${String(Math.floor(micros / 1e6)).padStart(2, '0')}:${String(micros % 1e6).padStart(6, '0')}`;
    const action = trace.kind[i] === EventKind.Alloc ? 'allocate' : 'free';
    const stream = trace.stream ? `0x${trace.stream[i]!.toString(16)}` : '0x0';
    lines.push(`1,${time},${action},${pointer(trace.id[i]!)},${trace.size[i]},${stream}`);
  }
  return `${lines.join('\n')}\n`;
}
