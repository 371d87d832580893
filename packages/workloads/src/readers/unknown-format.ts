/**
 * What input that is no trace is, in words: the error a reader throws when the first bytes name no
 * format says what the file is not (the formats read) and what it looks like instead, so a person
 * who picked the wrong file sees which one it was, without bytes printed as garbled text.
 *
 * ```
 *  no bytes                          ─► an empty file (gzip data that inflates to nothing)
 *  a known signature (PNG, ZIP, …)   ─► its bytes in hex, and what files start so
 *  UTF-8 text                        ─► its first line, quoted; JSON: which keys it lacks
 *  anything else                     ─► its first bytes in hex
 * ```
 */
import { TraceFormatError } from '../errors';

/** The formats the readers take, as a list for a sentence. */
const READ =
  'a PyTorch memory snapshot, PyTorch profiler trace, RMM log, malloc trace or CSV trace';

/** Files people pick by mistake, by the bytes they start with. */
const SIGNATURES: readonly { readonly bytes: readonly number[]; readonly what: string }[] = [
  { bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], what: 'a PNG image' },
  { bytes: [0xff, 0xd8, 0xff], what: 'a JPEG image' },
  { bytes: [0x47, 0x49, 0x46, 0x38], what: 'a GIF image' },
  { bytes: [0x25, 0x50, 0x44, 0x46, 0x2d], what: 'a PDF document' },
  {
    bytes: [0x50, 0x4b, 0x03, 0x04],
    what:
      'a ZIP archive, which is what torch.save writes (a model or tensors, not a memory ' +
      'snapshot: torch.cuda.memory._dump_snapshot() writes one)',
  },
  { bytes: [0x50, 0x4b, 0x05, 0x06], what: 'an empty ZIP archive' },
  { bytes: [0x42, 0x5a, 0x68], what: 'bzip2 data (decompress it first: gzip is read as it is)' },
  {
    bytes: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00],
    what: 'xz data (decompress it first: gzip is read as it is)',
  },
  {
    bytes: [0x28, 0xb5, 0x2f, 0xfd],
    what: 'zstd data (decompress it first: gzip is read as it is)',
  },
  { bytes: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], what: 'a 7-Zip archive' },
  { bytes: [0x75, 0x73, 0x74, 0x61, 0x72], what: 'a tar archive' },
  { bytes: [0x7f, 0x45, 0x4c, 0x46], what: 'an ELF program or library' },
  { bytes: [0x53, 0x51, 0x4c, 0x69, 0x74, 0x65, 0x20], what: 'an SQLite database' },
  { bytes: [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a], what: 'an HDF5 file' },
  { bytes: [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59], what: 'a NumPy array (.npy)' },
  { bytes: [0x50, 0x41, 0x52, 0x31], what: 'a Parquet file' },
];

/** Where a signature sits: a tar archive's at byte 257, the others' at the start. */
const OFFSETS: ReadonlyMap<string, number> = new Map([['a tar archive', 257]]);

/** Bytes of the start shown in hex. */
const SHOWN_BYTES = 8;

/** The first `count` bytes of `data`, in hex (`89 50 4E 47`). */
function hex(data: Uint8Array, count = SHOWN_BYTES): string {
  return Array.from(data.subarray(0, count), (b) => b.toString(16).toUpperCase().padStart(2, '0'))
    .join(' ')
    .concat(data.length > count ? ' …' : '');
}

/** Whether the first bytes of `data` read as text: UTF-8, no control character but white space. */
function isText(data: Uint8Array): boolean {
  const head = data.subarray(0, 4096);
  for (const b of head) {
    if ((b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f) return false;
  }
  try {
    // A multi-byte character cut at the end of the sample is no reason to call it binary.
    new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, lastWhole(head)));
    return true;
  } catch {
    return false;
  }
}

/** The length of `head` without a UTF-8 sequence cut at its end. */
function lastWhole(head: Uint8Array): number {
  let end = head.length;
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const b = head[end - back]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back
    if (b >= 0xc0) end -= back; // a sequence's lead byte: drop it and what followed
    break;
  }
  return end;
}

/** What text is: JSON that names no format, or text whose first line is shown. */
function describeText(data: Uint8Array): string {
  const text = new TextDecoder('utf-8').decode(data.subarray(0, 4096)).replace(/^\ufeff/, '');
  const first =
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? '';
  if (first === '') return 'text with nothing but white space';
  if (first.startsWith('{') || first.startsWith('[')) {
    return (
      "JSON that names neither a snapshot's `segments` or `device_traces` nor a profiler " +
      "trace's `traceEvents` in its first MiB"
    );
  }
  const shown = first.length > 60 ? `${first.slice(0, 57)}…` : first;
  return (
    `text whose first line is ${JSON.stringify(shown)} (an RMM log begins with its header ` +
    'Thread,Time,Action,Pointer,Size,Stream, a malloc trace with lines Alloc(n), and Free(k), ' +
    'a CSV trace with op,id,size)'
  );
}

/** What the bytes `data` are, when they are no trace (see the module comment): a noun phrase. */
export function describeUnknownBytes(data: Uint8Array, gzip = false): string {
  if (data.length === 0) return gzip ? 'gzip data that inflates to nothing' : 'an empty file';
  const subject = gzip ? 'gzip data whose content' : 'a file that';
  for (const { bytes, what } of SIGNATURES) {
    const at = OFFSETS.get(what) ?? 0;
    if (bytes.every((b, i) => data[at + i] === b)) {
      return `${subject} starts with bytes ${hex(data)}: ${what}`;
    }
  }
  if (isText(data)) return `${gzip ? 'gzip data whose content is ' : ''}${describeText(data)}`;
  return `${subject} starts with bytes ${hex(data)}, of no kind known here`;
}

/** Input whose first bytes name no format the readers take (see the module comment). */
export class UnknownFormatError extends TraceFormatError {
  /** What the input is instead, in words (`an empty file`, `… a PNG image`). */
  readonly looksLike: string;

  constructor(source: string, data: Uint8Array, gzip = false) {
    const looksLike = describeUnknownBytes(data, gzip);
    super(source, 0, READ, looksLike, 'byte');
    this.looksLike = looksLike;
    this.message = `${source}: not ${READ}: it is ${looksLike}`;
  }
}
