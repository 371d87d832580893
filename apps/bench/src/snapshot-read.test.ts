import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { type ChildUsage, GNU_TIME, lastLine, measureChild, usageReporter } from './child-usage';
import { formatMegabytes, parseByteSize, writeSnapshotFile } from './snapshot-file';
import { markdownTable, type SnapshotRow } from './snapshot-report';

const scratch = mkdtempSync(join(tmpdir(), 'allot-bench-snapshot-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function usage(seconds: number, peakRssBytes: number | null, exitCode = 0): ChildUsage {
  return { exitCode, seconds, peakRssBytes, lastStderrLine: '', stdout: '' };
}

describe('sizes', () => {
  it('reads decimal and binary units, and refuses anything else', () => {
    expect(parseByteSize('40MB')).toBe(40_000_000);
    expect(parseByteSize('1GB')).toBe(1e9);
    expect(parseByteSize('1.5gib')).toBe(1.5 * 2 ** 30);
    expect(parseByteSize('4096')).toBe(4096);
    expect(parseByteSize('0')).toBeNull();
    expect(parseByteSize('12 parsecs')).toBeNull();
    expect(formatMegabytes(38_786_246)).toBe('38.8 MB');
    expect(formatMegabytes(1.02e9)).toBe('1.02 GB');
  });
});

describe('writeSnapshotFile', () => {
  it('writes the same pickle plain and gzipped', async () => {
    const options = { events: 3000, depth: 4, seed: 2 };
    const plain = await writeSnapshotFile(join(scratch, 'a.pickle'), options);
    const zipped = await writeSnapshotFile(join(scratch, 'a.pickle.gz'), options, true);
    const bytes = readFileSync(plain.path);
    expect(plain.fileBytes).toBe(bytes.length);
    expect(plain.bytes).toBe(bytes.length);
    expect(zipped.fileBytes).toBeLessThan(bytes.length);
    expect(Buffer.compare(gunzipSync(readFileSync(zipped.path)), bytes)).toBe(0);
  });
});

describe('measureChild', () => {
  const node = process.execPath;
  const timeout = { cwd: scratch, timeoutMs: 20_000 };

  it('reports a failure with its exit status and the last line of its stderr', async () => {
    const code = "process.stderr.write('progress\\r50 %\\rError: too big\\n\\n'); process.exit(3)";
    const result = await measureChild(node, ['-e', code], timeout);
    expect(result.exitCode).toBe(3);
    expect(result.lastStderrLine).toBe('Error: too big');
  });

  it.skipIf(!existsSync(GNU_TIME))('measures peak memory with GNU time', async () => {
    const code = 'const b = Buffer.alloc(64 * 2 ** 20, 1); console.log(b[5])';
    const result = await measureChild(node, ['-e', code], timeout);
    expect(result).toMatchObject({ exitCode: 0, stdout: '1\n' });
    expect(result.peakRssBytes).toBeGreaterThan(64 * 2 ** 20);
  });

  it('has a Node child report its own memory without GNU time', async () => {
    const reporter = usageReporter(scratch);
    const code = 'const b = Buffer.alloc(64 * 2 ** 20, 1); console.log(b[5])';
    const usageFile = join(scratch, 'usage.json');
    const options = { ...timeout, gnuTime: false, usageFile };
    const result = await measureChild(node, ['--require', reporter, '-e', code], options);
    expect(result.exitCode).toBe(0);
    expect(result.peakRssBytes).toBeGreaterThan(64 * 2 ** 20);
    expect(existsSync(usageFile)).toBe(false);
  });

  it('kills a child past its time and says so', async () => {
    const result = await measureChild(node, ['-e', 'setTimeout(() => {}, 60_000)'], {
      ...timeout,
      timeoutMs: 300,
    });
    expect(result.exitCode).toBe(128 + 9);
    expect(result.lastStderrLine).toBe('killed after 0.3 s');
  });

  it('reports a command that cannot start', async () => {
    const result = await measureChild(join(scratch, 'missing'), [], { ...timeout, gnuTime: false });
    expect(result.exitCode).toBeNull();
    expect(result.lastStderrLine).toMatch(/ENOENT/);
  });

  it('takes the last non-empty line', () => {
    expect(lastLine('a\nb\r\n\n')).toBe('b');
    expect(lastLine('')).toBe('');
  });
});

describe('markdownTable', () => {
  const row: SnapshotRow = {
    file: 'synthetic-40MB-d16-s1',
    bytes: 40e6,
    events: 350_000,
    depth: 16,
    sharedFrames: 1,
    lab: { runs: [usage(3, 400e6), usage(2, 300e6), usage(4, 500e6)], failure: null },
    python: { runs: [usage(0.9, 200e6)], failure: null, workSeconds: [0.5] },
  };

  it('shows medians, memory per byte of file and the python/lab ratio', () => {
    const table = markdownTable([row]);
    expect(table.split('\n')[0]).toContain('| file | size | events | stack depth |');
    expect(table).toContain(
      '| synthetic-40MB-d16-s1 | 40.0 MB | 350,000 | 16 | 1 | 3.00 s | 400.0 MB | 10.00 | 0.50 s | 200.0 MB | 0.17× |',
    );
  });

  it('shows a failed lab run as a row: its exit status and last stderr line', () => {
    const failure = { ...usage(0.2, null, 2), lastStderrLine: 'input is over 128 MiB | limit' };
    const table = markdownTable([{ ...row, lab: { runs: [], failure }, python: null }]);
    expect(table).toContain(
      '| failed (exit 2): input is over 128 MiB \\| limit | – | – | – | – | – |',
    );
  });
});
