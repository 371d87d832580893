/**
 * A file that is no trace is said to be what it is, never shown as garbled bytes: an empty file,
 * an image or an archive by its signature, text by its first line, anything else by its first
 * bytes in hex; through gzip too.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors';
import { parseTraces } from './trace-stream';
import { UnknownFormatError } from './unknown-format';

const NOT =
  'not a PyTorch memory snapshot, PyTorch profiler trace, RMM log, malloc trace or CSV trace: it is ';

/** The error reading `bytes` (named `name`) fails with. */
async function errorOf(bytes: Uint8Array | string, name = 'file'): Promise<UnknownFormatError> {
  const data = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes;
  const error = await parseTraces(data, { name }).then(
    () => {
      throw new Error(`${name} was read as a trace`);
    },
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(UnknownFormatError);
  // A TraceFormatError still: the same code, caught where any format error is.
  expect(TraceFormatError.isInstance(error)).toBe(true);
  const message = (error as Error).message;
  // Printable, with no replacement character: nothing garbled.
  const garbled = [...message].filter((c) => c < ' ' || c === '\u007f' || c === '\ufffd');
  expect(garbled).toEqual([]);
  return error as UnknownFormatError;
}

const bytes = (...values: number[]) => Uint8Array.from(values);

describe('a file that is no trace', () => {
  it('is an empty file', async () => {
    expect((await errorOf('', 'empty.pickle')).message).toBe(`empty.pickle: ${NOT}an empty file`);
    expect((await errorOf(gzipSync(Buffer.alloc(0)), 'empty.gz')).message).toBe(
      `empty.gz: ${NOT}gzip data that inflates to nothing`,
    );
  });

  it('is what its signature says', async () => {
    const png = bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48);
    expect((await errorOf(png, 'plot.png')).message).toBe(
      `plot.png: ${NOT}a file that starts with bytes 89 50 4E 47 0D 0A 1A 0A …: a PNG image`,
    );
    const zip = bytes(0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 8, 0);
    expect((await errorOf(zip, 'model.pt')).message).toMatch(
      /^model\.pt: .*: it is a file that starts with bytes 50 4B 03 04 14 00 00 00 …: a ZIP archive, which is what torch\.save writes/,
    );
    expect((await errorOf(gzipSync(png), 'plot.png.gz')).message).toBe(
      `plot.png.gz: ${NOT}gzip data whose content starts with bytes 89 50 4E 47 0D 0A 1A 0A …: a PNG image`,
    );
    const tar = new Uint8Array(1024);
    tar.set(new TextEncoder().encode('ustar'), 257);
    tar[0] = 0x61;
    expect((await errorOf(tar, 'dumps.tar')).looksLike).toMatch(/: a tar archive$/);
  });

  it('is text, shown by its first line', async () => {
    expect((await errorOf('\n\nhello, world\nmore\n', 'notes.txt')).message).toMatch(
      /^notes\.txt: .*: it is text whose first line is "hello, world" \(an RMM log begins with its header Thread,Time,Action,Pointer,Size,Stream/,
    );
    expect((await errorOf('{"config": {"lr": 0.1}}', 'config.json')).looksLike).toBe(
      "JSON that names neither a snapshot's `segments` or `device_traces` nor a profiler trace's `traceEvents` in its first MiB",
    );
    // A character cut by the end of the first chunk read is still text.
    const long = `${'é'.repeat(3000)}\n`;
    expect((await errorOf(long, 'accents.txt')).looksLike).toMatch(
      /^text whose first line is "é{57}…"/,
    );
  });

  it('is binary of no known kind, shown in hex', async () => {
    const noise = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256);
    expect((await errorOf(noise, 'garbage.bin')).message).toBe(
      `garbage.bin: ${NOT}a file that starts with bytes 0D FC EB DA C9 B8 A7 96 …, of no kind known here`,
    );
  });
});
