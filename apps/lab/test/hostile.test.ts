/**
 * The lab against hostile input: files that users download, share and attach to bug reports. Each
 * case spawns the built CLI (`dist/cli.js`, built before this task by turbo) on a file generated
 * here, and asserts the exit status, one line of message on stderr and no stack trace, within a
 * time and a memory bound (the child's own peak RSS, read through a small wrapper).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The built CLI; `ALLOT_LAB_CLI` names another build of it (a bundle, an installed copy). */
const CLI =
  process.env.ALLOT_LAB_CLI ??
  join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');
/** The bounds for any input: 60 s and 1.5 GB. Cases stay far below them. */
const TIME_LIMIT_MS = 60_000;
const MEMORY_LIMIT_MB = 1536;
/** Bound of the cases that must not hold their expansion (bombs, devices): a few hundred MB. */
const SMALL_MEMORY_MB = 400;

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  readonly rssMb: number;
}

let dir = '';
let wrapper = '';
let rssCount = 0;

function runLab(args: readonly string[]): Promise<Outcome> {
  const rssFile = join(dir, `rss-${rssCount++}`);
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [wrapper, ...args], {
      cwd: dir,
      env: { ...process.env, ALLOT_TEST_CLI: CLI, ALLOT_TEST_RSS_FILE: rssFile, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      if (stdout.length < 1 << 20) stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      if (stderr.length < 1 << 20) stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), TIME_LIMIT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const rssKb = existsSync(rssFile) ? Number(readFileSync(rssFile, 'utf8')) : Number.NaN;
      resolve({ code, stdout, stderr, ms: performance.now() - start, rssMb: rssKb / 1024 });
    });
  });
}

function file(name: string, content: string | Uint8Array): string {
  writeFileSync(join(dir, name), content);
  return name;
}

const MALLOC = 'Alloc(64),\nAlloc(128),\nFree(0),\nFree(1),\n';
const RMM_HEADER = 'Thread,Time,Action,Pointer,Size,Stream\n';
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const u64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(n);
  return b;
};
type Part = string | Uint8Array | number[];
/** The bytes of `parts`, strings as Latin-1 (one byte a character). */
const joined = (parts: readonly Part[]) =>
  Buffer.concat(
    parts.map((p) =>
      typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p as Uint8Array),
    ),
  );
const pickle = (...parts: Part[]) => joined(parts);
const memoryEvent = (addr: number, bytes: number, ts = 1) =>
  `{"name":"[memory]","ph":"i","ts":${ts},"args":{"Addr":${addr},"Bytes":${bytes},"Device Type":1,"Device Id":0}}`;

/** A hostile case: the files it needs (made lazily), the arguments, and what must happen. */
interface Case {
  readonly name: string;
  readonly args: () => string[];
  /** Exit status expected: 0 for a valid trace that must replay, 'ran' for 0 or 1. @defaultValue 2 */
  readonly exit?: 0 | 2 | 'ran';
  /** A fragment the message must hold. */
  readonly says?: RegExp;
  /** Peak memory bound in MB. @defaultValue MEMORY_LIMIT_MB */
  readonly memoryMb?: number;
}

const NO_REPORT = ['--quiet', '--no-report'];
const replay =
  (name: string, content: string | Uint8Array, ...extra: string[]) =>
  () => ['replay', file(name, content), ...NO_REPORT, ...extra];

function gzipOf(text: string | Uint8Array): Buffer {
  return gzipSync(typeof text === 'string' ? Buffer.from(text) : text);
}

function cases(): Case[] {
  const ls = `${Array.from({ length: 200 }, (_, i) => `Alloc(${16 + i}),`).join('\n')}\n${Array.from({ length: 200 }, (_, i) => `Free(${i}),`).join('\n')}\n`;
  const lsGz = gzipOf(ls);
  const badCrc = Buffer.from(lsGz);
  badCrc[badCrc.length - 6]! ^= 0xff;
  const badDeflate = Buffer.from(lsGz);
  for (let i = 20; i < 40; i++) badDeflate[i] = 0xff;
  const badLength = Buffer.from(lsGz);
  badLength[badLength.length - 2]! ^= 0xff;
  // 1 GiB of zeros: one gzip member of 64 MiB, sixteen times (a valid multi-member stream).
  const zeros = gzipSync(Buffer.alloc(64 << 20), { level: 9 });
  const zeroBomb = Buffer.concat(Array.from({ length: 16 }, () => zeros));
  const allocLines = gzipSync(Buffer.from('Alloc(1),\n'.repeat(3 << 20)), { level: 9 });
  const profiler = (events: string[]) => `{"traceEvents":[${events.join(',')}]}`;
  const snapshot = (traces: string) => `{"segments":[],"device_traces":${traces}}`;
  // One allocation of 512 B at 0x1000 in `device_traces`, after the items of a root dict.
  const oneEntry = [
    '\x8c\x0ddevice_traces]]}(\x8c\x06action\x8c\x05alloc\x8c\x04addrJ',
    u32(4096),
    '\x8c\x04sizeM\x00\x02uaas',
  ];
  // A pickle whose memo repeats one list: 256 levels of 256 references each (4 billion lists once
  // expanded); and lists nested 5,000 deep. Both sit under a snapshot's `segments`, whose items
  // the reader takes one at a time, a segment dict each, and walks no further: it reads the
  // snapshot's one allocation, expanding nothing.
  const memoBomb = (() => {
    const parts: (string | Uint8Array)[] = ['\x80\x02}', '\x8c\x08segments', ']', 'q\x00'];
    for (let level = 1; level <= 4; level++) {
      parts.push(']', '(');
      for (let i = 0; i < 256; i++) parts.push('h', Buffer.from([level - 1]));
      parts.push('e', 'q', Buffer.from([level]));
    }
    parts.push('0'.repeat(5), 'h\x04', 's', ...oneEntry, '.');
    return pickle(...parts);
  })();
  // One list of 10,000 trace entries placed again and again through the memo: 25,000 places,
  // 250 million entries once expanded from a few hundred KB; nested (100 lists of 100 references
  // to it); held by 25,000 dicts; and, as it must be read, one frames list of 64 frames shared by
  // 200,000 blocks of the end state and by an allocation.
  const ref = (slot: number) => ['j', u32(slot)];
  const memoRepeats = (layout: 'list' | 'nested' | 'dicts') => {
    const parts: Part[] = ['\x80\x04}\x94(\x8c\x0ddevice_traces\x94]\x94(]\x94('];
    parts.push('}(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94J', u32(4096));
    parts.push('\x8c\x04size\x94M\x00\x02u');
    for (let i = 1; i < 10_000; i++) {
      parts.push('}(h\x04h\x05h\x06J', u32(4096 * (i + 1)), 'h\x07M\x00\x02u');
      if (i % 1000 === 999) parts.push(i === 9999 ? 'e' : 'e(');
    }
    if (layout === 'list') for (let i = 1; i < 25_000; i++) parts.push(...ref(3));
    else if (layout === 'dicts') {
      parts.push('}\x94h\x01', ...ref(3), 's');
      for (let i = 1; i < 25_000; i++) parts.push(...ref(8));
    } else {
      parts.push(']\x94(', ...Array.from({ length: 100 }, () => ref(3)).flat(), 'e');
      for (let i = 1; i < 100; i++) parts.push(...ref(8));
    }
    return joined([...parts, 'eu.']);
  };
  const sharedFrames = (() => {
    const parts: Part[] = ['\x80\x04}\x94(\x8c\x08segments\x94](}\x94('];
    parts.push('\x8c\x06device\x94K\x00\x8c\x07address\x94J', u32(1 << 30));
    parts.push('\x8c\x0atotal_size\x94J', u32(1 << 30), '\x8c\x06blocks\x94](');
    // The first block holds the frames list (slot 8), its frames new dicts; the rest refer to it.
    parts.push('}(h\x04J', u32(1 << 30), '\x8c\x06frames\x94]\x94(');
    for (let line = 0; line < 64; line++) {
      parts.push('}(\x8c\x08filename\x94\x8c\x08model.py\x94\x8c\x04line\x94K', [line]);
      parts.push('\x8c\x04name\x94\x8c\x01f\x94u');
    }
    parts.push('eu');
    for (let i = 1; i < 200_000; i++) {
      parts.push('}(h\x04J', u32((1 << 30) + i * 512), 'h\x07', ...ref(8), 'u');
    }
    parts.push('eue\x8c\x0ddevice_traces\x94]](}(\x8c\x06action\x94\x8c\x05alloc\x94');
    parts.push('\x8c\x04addr\x94J', u32(1 << 30), '\x8c\x04size\x94M\x00\x02h\x07', ...ref(8));
    return joined([...parts, 'ueau.']);
  })();
  const deepPickle = pickle(
    '\x80\x02}',
    '\x8c\x08segments',
    ']'.repeat(5000),
    'a'.repeat(4999),
    's',
    ...oneEntry,
    '.',
  );
  const deepJson = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  const manyStreams = (n: number) =>
    RMM_HEADER +
    Array.from(
      { length: n },
      (_, i) =>
        `1,0.${i},allocate,0x${((i + 1) * 4096).toString(16)},1024,0x${(i + 100).toString(16)}`,
    ).join('\n') +
    '\n' +
    Array.from(
      { length: n },
      (_, i) => `1,1.${i},free,0x${((i + 1) * 4096).toString(16)},1024,0x${(i + 100).toString(16)}`,
    ).join('\n') +
    '\n';

  return [
    // ── gzip ───────────────────────────────────────────────────────────────────────────────
    {
      name: 'truncated gzip',
      args: replay('t.gz', lsGz.subarray(0, 100)),
      says: /t\.gz: byte offset 100: .*truncated gzip/,
    },
    { name: 'gzip with a bad CRC', args: replay('crc.gz', badCrc), says: /crc\.gz: byte offset/ },
    { name: 'gzip with a bad length', args: replay('len.gz', badLength), says: /len\.gz/ },
    { name: 'corrupt deflate data', args: replay('deflate.gz', badDeflate), says: /deflate\.gz/ },
    {
      name: 'gzip header only',
      args: replay('header.gz', lsGz.subarray(0, 10)),
      says: /header\.gz/,
    },
    {
      name: 'gzip magic only',
      args: replay('magic.gz', Buffer.from([0x1f, 0x8b])),
      says: /magic\.gz/,
    },
    { name: 'gzip of nothing', args: replay('nothing.gz', gzipOf('')), says: /no events|expected/ },
    {
      name: '1 GiB of zeros gzipped',
      args: replay('zeros.gz', zeroBomb),
      says: /zeros\.gz:1: expected a PyTorch/,
      memoryMb: SMALL_MEMORY_MB,
    },
    {
      name: '1 GiB of zeros gzipped, read as malloc',
      args: replay('zeros2.gz', zeroBomb, '--format', 'malloc'),
      says: /at most 128 MiB of data after decompression/,
      memoryMb: 700,
    },
    {
      name: 'valid lines gzipped past the input limit',
      args: replay('lines.gz', allocLines, '--max-input', '8MiB'),
      says: /at most 8 MiB of data after decompression|at most .* events/,
      memoryMb: SMALL_MEMORY_MB,
    },
    {
      name: 'valid lines past the event limit',
      args: replay('lines2.gz', allocLines, '--max-input', '40MiB'),
      says: /at most 625,000 events \(the event limit\)/,
      memoryMb: SMALL_MEMORY_MB,
    },
    { name: 'gzip inside gzip', args: replay('double.gz', gzipOf(lsGz)), says: /double\.gz/ },
    // ── devices, folders, missing and odd files ────────────────────────────────────────────
    {
      name: '/dev/zero',
      args: () => ['replay', '/dev/zero', ...NO_REPORT],
      says: /zero:1: expected/,
      memoryMb: SMALL_MEMORY_MB,
    },
    {
      name: '/dev/zero read as malloc',
      args: () => [
        'replay',
        '/dev/zero',
        ...NO_REPORT,
        '--format',
        'malloc',
        '--max-input',
        '4MiB',
      ],
      says: /at most 4 MiB of input/,
      memoryMb: SMALL_MEMORY_MB,
    },
    {
      name: '/dev/urandom',
      args: () => ['replay', '/dev/urandom', ...NO_REPORT, '--max-input', '8MiB'],
      memoryMb: SMALL_MEMORY_MB,
    },
    { name: '/dev/null', args: () => ['replay', '/dev/null', ...NO_REPORT], says: /null/ },
    {
      name: 'a folder',
      args: () => {
        mkdirSync(join(dir, 'folder'), { recursive: true });
        return ['replay', 'folder', ...NO_REPORT];
      },
      // A folder is a job of its rank snapshots (src/job): an empty one says what it looked for.
      says: /^allot-lab: folder holds no trace files: looked for \*\.pickle, \*\.pkl/,
    },
    {
      name: 'a missing file',
      args: () => ['replay', 'missing.trace', ...NO_REPORT],
      says: /missing\.trace: no such file/,
    },
    { name: 'an empty file', args: replay('empty', ''), says: /empty/ },
    {
      name: 'an empty file read as malloc',
      args: replay('empty.malloc', '', '--format', 'malloc'),
      says: /no events/,
    },
    {
      name: 'an empty file read as csv',
      args: replay('empty.csv2', '', '--format', 'csv'),
      says: /no events/,
    },
    {
      name: 'an empty file read as rmm',
      args: replay('empty.rmm2', '', '--format', 'rmm'),
      says: /empty\.rmm2/,
    },
    {
      name: 'an empty file read as a snapshot',
      args: replay('empty.snap', '', '--format', 'torch-snapshot'),
      says: /empty\.snap/,
    },
    {
      name: 'an empty file read as a profiler trace',
      args: replay('empty.prof', '', '--format', 'torch-profiler'),
      says: /empty\.prof/,
    },
    { name: 'white space only', args: replay('space.txt', ' \n\t\n\n'), says: /space\.txt/ },
    { name: 'a byte-order mark only', args: replay('bom.txt', '\ufeff'), says: /bom\.txt/ },
    {
      name: 'binary garbage',
      args: replay(
        'garbage.bin',
        Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)),
      ),
      says: /garbage\.bin/,
    },
    {
      name: 'a NUL byte in a malloc line',
      args: replay('nul.trace', 'Alloc(64),\nAl\0loc(1),\n'),
      says: /nul\.trace:2:/,
    },
    // ── CSV ────────────────────────────────────────────────────────────────────────────────
    { name: 'CSV header only', args: replay('header.csv', 'op,id,size\n'), says: /no events/ },
    {
      name: 'CSV header and blank lines',
      args: replay('blank.csv', 'op,id,size\n\n\n# nothing\n'),
      says: /no events/,
    },
    {
      name: 'CSV with too many fields',
      args: replay('fields.csv', 'op,id,size\nalloc,a,64,8,9\n'),
      says: /fields\.csv:2:/,
    },
    {
      name: 'CSV with a negative size',
      args: replay('neg.csv', 'op,id,size\nalloc,a,-64\n'),
      says: /neg\.csv:2:/,
    },
    {
      name: 'CSV with a size that is no number',
      args: replay('nan.csv', 'op,id,size\nalloc,a,lots\n'),
      says: /nan\.csv:2:/,
    },
    {
      name: 'CSV with a size of 0',
      args: replay('zero.csv', 'op,id,size\nalloc,a,0\n'),
      says: /zero\.csv/,
    },
    {
      name: 'CSV with a size of 2^53',
      args: replay('unsafe.csv', 'op,id,size\nalloc,a,9007199254740992\n'),
      says: /unsafe\.csv/,
    },
    {
      name: 'CSV with an alignment not a power of two',
      args: replay('align.csv', 'op,id,size,alignment\nalloc,a,64,24\n'),
      says: /align\.csv/,
    },
    {
      name: 'CSV with an alignment of 2^40',
      args: replay('align40.csv', 'op,id,size,alignment\nalloc,a,64,1099511627776\n'),
      says: /align40\.csv/,
    },
    {
      name: 'CSV free of an unknown id',
      args: replay('unknown.csv', 'op,id,size\nalloc,a,64\nfree,b\n'),
      says: /unknown\.csv:3:/,
    },
    {
      name: 'CSV double free',
      args: replay('double.csv', 'op,id,size\nalloc,a,64\nfree,a\nfree,a\n'),
      says: /double\.csv:4:/,
    },
    {
      name: 'CSV with an unknown op',
      args: replay('op.csv', 'op,id,size\nalloc,a,64\nrealloc,a,128\n'),
      says: /op\.csv:3:/,
    },
    // ── malloc traces ──────────────────────────────────────────────────────────────────────
    { name: 'malloc Alloc(-1)', args: replay('neg.trace', 'Alloc(-1),\n'), says: /neg\.trace:1:/ },
    {
      name: 'malloc Free before any Alloc',
      args: replay('free.trace', 'Free(0),\n'),
      says: /free\.trace:1:/,
    },
    {
      name: 'malloc double free',
      args: replay('dfree.trace', 'Alloc(8),\nFree(0),\nFree(0),\n'),
      says: /dfree\.trace:3:/,
    },
    {
      name: 'malloc size past 2^53',
      args: replay('huge.trace', 'Alloc(99999999999999999999),\n'),
      says: /huge\.trace:1:/,
    },
    {
      name: 'malloc garbage after valid lines',
      args: replay('tail.trace', `${MALLOC}rm -rf /\n`),
      says: /tail\.trace:5:/,
    },
    {
      name: 'malloc exponent notation',
      args: replay('exp.trace', 'Alloc(1e5),\n'),
      says: /exp\.trace:1:/,
    },
    {
      name: 'malloc Free of a huge id',
      args: replay('bigid.trace', 'Alloc(8),\nFree(4294967296),\n'),
      says: /bigid\.trace:2:/,
    },
    // ── RMM logs ───────────────────────────────────────────────────────────────────────────
    { name: 'RMM header only', args: replay('header.rmm', RMM_HEADER), says: /no events/ },
    {
      name: 'RMM with a wrong header',
      args: replay(
        'wrong.rmm',
        'Thread,Time,Action,Pointer,Size\n1,0,allocate,0x10,8\n',
        '--format',
        'rmm',
      ),
      says: /wrong\.rmm:1:/,
    },
    {
      name: 'RMM with a bad pointer',
      args: replay('ptr.rmm', `${RMM_HEADER}1,0,allocate,zzz,64,0x0\n`),
      says: /ptr\.rmm:2:/,
    },
    {
      name: 'RMM with too few fields',
      args: replay('few.rmm', `${RMM_HEADER}1,0,allocate,0x10\n`),
      says: /few\.rmm:2:/,
    },
    {
      name: 'RMM with a negative size',
      args: replay('neg.rmm', `${RMM_HEADER}1,0,allocate,0x10,-5,0x0\n`),
      says: /neg\.rmm:2:/,
    },
    {
      name: 'RMM with an unknown action',
      args: replay('act.rmm', `${RMM_HEADER}1,0,explode,0x10,64,0x0\n`),
      says: /act\.rmm:2:/,
    },
    {
      name: 'RMM allocating a live pointer again',
      args: replay(
        'twice.rmm',
        `${RMM_HEADER}1,0,allocate,0x10,64,0x0\n1,1,allocate,0x10,64,0x0\n`,
      ),
      says: /twice\.rmm/,
    },
    // ── JSON (profiler traces and snapshots) ──────────────────────────────────────────────
    {
      name: 'truncated JSON',
      args: replay('cut.json', '{"traceEvents":[{"name":"[memory]"'),
      says: /cut\.json:1:/,
    },
    {
      name: 'JSON that is a number',
      args: replay('num.json', '42', '--format', 'torch-profiler'),
      says: /num\.json/,
    },
    {
      name: 'JSON null',
      args: replay('null.json', 'null', '--format', 'torch-profiler'),
      says: /null\.json/,
    },
    {
      name: 'traceEvents not a list',
      args: replay('events.json', '{"traceEvents":{}}'),
      says: /events\.json/,
    },
    {
      name: 'a memory event without args',
      args: replay('args.json', '{"traceEvents":[{"name":"[memory]","ts":1}]}'),
      says: /args\.json: event 1/,
    },
    {
      name: 'a memory event with fractional Bytes',
      args: replay('frac.json', profiler([memoryEvent(4096, 1.5)])),
      says: /frac\.json: event 1/,
    },
    {
      name: 'a memory event with a negative Addr',
      args: replay('addr.json', profiler([memoryEvent(-4096, 512)])),
      says: /addr\.json: event 1/,
    },
    {
      name: 'a profiler trace with no memory events',
      args: replay('none.json', '{"traceEvents":[{"name":"aten::add","ts":1}]}'),
      says: /none\.json/,
    },
    {
      name: 'tune on memory events of 0 bytes',
      args: () => [
        'tune',
        file('zero.json', profiler([memoryEvent(4096, 0), memoryEvent(8192, 0, 2)])),
        '--quiet',
      ],
      says: /zero\.json/,
    },
    { name: 'JSON nested 100,000 deep', args: replay('deep.json', deepJson), says: /deep\.json/ },
    {
      name: 'JSON past the container limit',
      args: replay('many.json', `[${'{},'.repeat(200_000)}{}]`, '--max-input', '4MiB'),
      says: /JSON objects and arrays/,
    },
    {
      name: 'JSON in UTF-16',
      args: replay(
        'utf16.json',
        Buffer.from(`\ufeff${profiler([memoryEvent(4096, 512)])}`, 'utf16le'),
      ),
      says: /utf16\.json/,
    },
    {
      name: 'snapshot with device_traces not a list',
      args: replay('snap1.json', snapshot('{}')),
      says: /snap1\.json/,
    },
    {
      name: 'snapshot with empty device_traces',
      args: replay('snap2.json', snapshot('[[]]')),
      says: /snap2\.json/,
    },
    {
      name: 'snapshot entry with a string size',
      args: replay(
        'snap3.json',
        snapshot('[[{"action":"alloc","addr":4096,"size":"big","stream":0}]]'),
      ),
      says: /snap3\.json/,
    },
    {
      name: 'snapshot entry that is a number',
      args: replay('snap4.json', snapshot('[[7]]')),
      says: /snap4\.json/,
    },
    // ── pickles ────────────────────────────────────────────────────────────────────────────
    {
      name: 'a self-referencing list as a dict key',
      args: replay('ck.pickle', pickle('\x80\x02}]q\x00h\x00aNs.')),
      says: /ck\.pickle: byte offset 10: expected a hashable dict key/,
    },
    {
      name: 'a memo bomb',
      args: replay('memo.pickle', memoBomb),
      exit: 0,
      memoryMb: SMALL_MEMORY_MB,
    },
    ...(['list', 'nested', 'dicts'] as const).map((layout) => ({
      name: `memo repeats of a trace list (${layout})`,
      args: replay(`repeats-${layout}.pickle`, memoRepeats(layout)),
      says: /repeats-\w+\.pickle: byte offset \d+: expected at most 8,000,000 trace entries after memo expansion/,
      memoryMb: SMALL_MEMORY_MB,
    })),
    {
      name: 'a frames list shared by 200,000 blocks',
      args: replay('frames.pickle', sharedFrames),
      exit: 'ran' as const,
      memoryMb: SMALL_MEMORY_MB,
    },
    {
      name: 'a multi-MB LONG4 integer',
      args: replay(
        'long.pickle',
        pickle('\x80\x02\x8b', u32(4 << 20), Buffer.alloc(4 << 20, 0x11), '.'),
      ),
      says: /long\.pickle: byte offset 2: expected at most 1,024 bytes in one integer/,
    },
    {
      name: 'a decimal INT of 100,000 digits',
      args: replay('int.pickle', pickle('\x80\x02I', '9'.repeat(100_000), '\n.')),
      says: /int\.pickle: byte offset 2/,
    },
    {
      name: 'lists nested 5,000 deep',
      args: replay('deep.pickle', deepPickle),
      exit: 0,
      memoryMb: SMALL_MEMORY_MB,
    },
    {
      name: 'a truncated pickle',
      args: replay('cut.pickle', pickle('\x80\x02}q\x00(X\x05\x00\x00\x00devi')),
      says: /cut\.pickle: byte offset/,
    },
    {
      name: 'an unknown pickle opcode',
      args: replay('op.pickle', pickle('\x80\x02\xff.')),
      says: /op\.pickle: byte offset 2/,
    },
    {
      name: 'a GLOBAL opcode',
      args: replay('global.pickle', pickle('\x80\x02cos\nsystem\n.')),
      says: /global\.pickle: byte offset 2: .*GLOBAL/,
    },
    {
      name: 'a REDUCE opcode',
      args: replay('reduce.pickle', pickle('\x80\x02N)R.')),
      says: /REDUCE/,
    },
    {
      name: 'pickle protocol 6',
      args: replay('proto.pickle', pickle('\x80\x06N.')),
      says: /protocol 6/,
    },
    {
      name: 'STOP on an empty stack',
      args: replay('stop.pickle', pickle('\x80\x02.')),
      says: /stop\.pickle: byte offset 2/,
    },
    {
      name: 'APPEND to a dict',
      args: replay('append.pickle', pickle('\x80\x02}Na.')),
      says: /append\.pickle: byte offset 4/,
    },
    {
      name: 'SETITEM on a list',
      args: replay('setitem.pickle', pickle('\x80\x02]NNs.')),
      says: /setitem\.pickle: byte offset 5/,
    },
    {
      name: 'BINGET of a missing memo entry',
      args: replay('memo2.pickle', pickle('\x80\x02h\x07.')),
      says: /memo2\.pickle: byte offset 2/,
    },
    {
      name: 'a BINUNICODE of 4 GiB declared',
      args: replay('str.pickle', pickle('\x80\x02X', u32(0xffffffff), 'abc')),
      says: /str\.pickle: byte offset 2/,
    },
    {
      name: 'a BINBYTES8 of 2^60 declared',
      args: replay('bytes.pickle', pickle('\x80\x04\x8e', u64(1n << 60n), 'abc')),
      says: /bytes\.pickle: byte offset 2/,
    },
    {
      name: 'a pickled list, not a snapshot',
      args: replay('list.pickle', pickle('\x80\x02]q\x00.')),
      says: /list\.pickle/,
    },
    {
      name: 'a pickled dict without device_traces',
      args: replay('dict.pickle', pickle('\x80\x02}q\x00.')),
      says: /dict\.pickle/,
    },
    {
      name: 'a memo filled by MEMOIZE',
      args: replay(
        'memoize.pickle',
        pickle('\x80\x04N', '\x94'.repeat(2 << 20), '.'),
        '--max-input',
        '16MiB',
      ),
      says: /memoize\.pickle: byte offset \d+: expected at most [\d,]+ memo entries/,
      memoryMb: SMALL_MEMORY_MB,
    },
    {
      name: 'a million Nones and no STOP',
      args: replay('nones.pickle', pickle('\x80\x02', 'N'.repeat(1 << 20))),
      says: /nones\.pickle: byte offset/,
    },
    {
      name: 'a million MARKs',
      args: replay('marks.pickle', pickle('\x80\x02', '('.repeat(1 << 20), '.')),
      says: /marks\.pickle: byte offset/,
    },
    {
      name: 'a tuple key nested past the key limit',
      args: replay('key.pickle', pickle('\x80\x02}', ')', '\x85'.repeat(3000), 'Ns.')),
      says: /key\.pickle/,
    },
    // ── options ────────────────────────────────────────────────────────────────────────────
    {
      name: '--out naming an existing file',
      args: () => ['replay', file('out1.trace', MALLOC), '--quiet', '--out', file('taken', 'x')],
      says: /--out taken: a file of that name is in the way/,
    },
    {
      name: '--out under a file',
      args: () => [
        'replay',
        file('out2.trace', MALLOC),
        '--quiet',
        '--out',
        `${file('taken2', 'x')}/report`,
      ],
      says: /taken2 is a file, not a folder/,
    },
    {
      name: '--max-input that is no size',
      args: () => ['replay', file('mi.trace', MALLOC), '--max-input', 'lots'],
      says: /--max-input expects a size/,
    },
    {
      name: '--max-input 0',
      args: () => ['replay', file('mi0.trace', MALLOC), '--max-input', '0'],
      says: /--max-input/,
    },
    {
      name: '--max-input smaller than the file',
      args: () => ['replay', file('mi1.trace', MALLOC), ...NO_REPORT, '--max-input', '8'],
      says: /mi1\.trace: byte offset 8: expected at most 8 bytes of input/,
    },
    {
      name: '--capacity 0',
      args: () => ['replay', file('cap.trace', MALLOC), '--capacity', '0'],
      says: /--capacity/,
    },
    {
      name: 'tune --memory 1',
      args: () => ['tune', file('tune.trace', MALLOC), '--quiet', '--memory', '1'],
      says: /--memory 1 B is less than tune\.trace's peak live bytes/,
    },
    {
      name: 'an unknown option',
      args: () => ['replay', 'x', '--frobnicate'],
      says: /unknown option '--frobnicate'/,
    },
    {
      name: '--format bogus',
      args: () => ['replay', 'x', '--format', 'bogus'],
      says: /--format expects one of/,
    },
    { name: '--seed -1', args: () => ['--seed', '-1'], says: /--seed/ },
    {
      name: '--allocators bogus',
      args: () => ['--allocators', 'bogus'],
      says: /unknown allocator 'bogus'/,
    },
    {
      name: 'replay without files',
      args: () => ['replay'],
      says: /replay needs at least one trace file/,
    },
    {
      name: 'tune with two missing files',
      args: () => ['tune', 'a', 'b'], // several files are a job's ranks
      says: /cannot read a: no such file or folder/,
    },
    {
      name: 'capacity with two files',
      args: () => ['capacity', 'a', 'b'],
      says: /takes one trace file/,
    },
    {
      name: '--format csv on a pickle',
      args: replay('asCsv.pickle', pickle('\x80\x02}q\x00.'), '--format', 'csv'),
      says: /asCsv\.pickle:1:/,
    },
    {
      name: '--format torch-snapshot on a malloc trace',
      args: replay('asSnap.trace', MALLOC, '--format', 'torch-snapshot'),
      says: /asSnap\.trace/,
    },
    {
      name: '--format torch-profiler on a pickle',
      args: replay('asProf.pickle', pickle('\x80\x02}q\x00.'), '--format', 'torch-profiler'),
      says: /asProf\.pickle/,
    },
    {
      name: '--format rmm on a CSV trace',
      args: replay('asRmm.csv', 'op,id,size\nalloc,a,64\n', '--format', 'rmm'),
      says: /asRmm\.csv:1:/,
    },
    // ── valid extremes: a replay (exit 0 or 1), or exit 2 with a reason ──────────────────
    { name: '2,000 streams', args: replay('streams.rmm', manyStreams(2000)), exit: 0 },
    {
      name: '9,000 streams through the caching pools',
      args: replay(
        'streams9k.rmm',
        manyStreams(9000),
        '--allocators',
        'caching,caching-expandable',
      ),
      exit: 0,
    },
    {
      name: 'a single block of 2^48 bytes',
      args: replay('b48.trace', 'Alloc(281474976710656),\nFree(0),\n'),
      exit: 0,
    },
    {
      name: 'a single block of 2^41 bytes, expandable segments',
      args: replay(
        'b41.trace',
        'Alloc(2199023255552),\nFree(0),\n',
        '--allocators',
        'caching-expandable',
      ),
      exit: 0,
    },
    {
      name: 'a single block of 2^53 - 1 bytes',
      args: replay('b53.trace', 'Alloc(9007199254740991),\nFree(0),\n'),
      says: /b53\.trace: cannot be replayed as asked/,
    },
    {
      name: 'a block of 2^53 - 1 bytes on the caching rows only',
      args: replay(
        'b53c.trace',
        'Alloc(9007199254740991),\nFree(0),\n',
        '--allocators',
        'caching,caching-expandable',
      ),
      exit: 'ran',
    },
    {
      name: 'JSON with a byte-order mark',
      args: replay(
        'bomok.json',
        `\ufeff${profiler([memoryEvent(4096, 512), memoryEvent(4096, -512, 2)])}`,
      ),
      exit: 0,
    },
    {
      name: 'a malloc trace with CRLF line ends',
      args: replay('crlf.trace', MALLOC.replaceAll('\n', '\r\n')),
      exit: 0,
    },
    { name: 'a gzipped malloc trace', args: replay('ok.trace.gz', lsGz), exit: 0 },
    {
      name: 'tune where every setting fails',
      args: () => ['tune', file('three48.trace', 'Alloc(281474976710656),\n'.repeat(3)), '--quiet'],
      exit: 'ran',
    },
  ];
}

beforeAll(() => {
  if (!existsSync(CLI))
    throw new Error(`${CLI} is missing: build the lab first (pnpm --filter @allot/lab... build)`);
  dir = mkdtempSync(join(tmpdir(), 'allot-hostile-'));
  wrapper = join(dir, 'measured-cli.mjs');
  writeFileSync(
    wrapper,
    [
      "import { writeFileSync } from 'node:fs';",
      "process.on('exit', () => writeFileSync(process.env.ALLOT_TEST_RSS_FILE, String(process.resourceUsage().maxRSS)));",
      'await import(process.env.ALLOT_TEST_CLI);',
    ].join('\n'),
  );
});

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

const ALL = cases();

describe('hostile input', () => {
  it('holds the cases the issue names and at least 60 more', () => {
    expect(ALL.length).toBeGreaterThanOrEqual(100);
    expect(new Set(ALL.map((c) => c.name)).size).toBe(ALL.length);
  });

  describe.concurrent.each(ALL)('$name', (testCase) => {
    it('ends as it must, on one line, within bounds', async () => {
      const outcome = await runLab(testCase.args());
      const lines = outcome.stderr.split('\n').filter((line) => line.trim() !== '');
      expect(outcome.stderr).not.toMatch(/^\s+at /m);
      expect(outcome.ms).toBeLessThan(TIME_LIMIT_MS);
      expect(outcome.rssMb).toBeLessThan(testCase.memoryMb ?? MEMORY_LIMIT_MB);
      if (testCase.exit === 'ran') {
        expect([0, 1], outcome.stderr).toContain(outcome.code);
        return;
      }
      if (testCase.exit === 0) {
        expect(outcome.code, outcome.stderr).toBe(0);
        return;
      }
      expect(outcome.code, outcome.stderr).toBe(2);
      expect(lines, outcome.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^allot-lab: /);
      if (testCase.says) expect(lines[0]).toMatch(testCase.says);
    });
  });
});

describe('--debug', () => {
  it('adds the stack to an input failure', async () => {
    const outcome = await runLab(['replay', file('dbg.trace', 'Free(0),\n'), '--quiet', '--debug']);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/^allot-lab: dbg\.trace:1:/);
    expect(outcome.stderr).toMatch(/^\s+at /m);
  });
});

describe('memory', () => {
  it("stays within a small multiple of the trace's size", async () => {
    const events = 300_000;
    const lines: string[] = [];
    for (let i = 0; i < events; i++) lines.push(`Alloc(${64 + (i % 4096)}),`, `Free(${i}),`);
    const name = file('big.trace', `${lines.join('\n')}\n`);
    const size = readFileSync(join(dir, name)).length;
    const baseline = await runLab(['list']);
    const outcome = await runLab(['replay', name, ...NO_REPORT, '--allocators', 'best-fit']);
    expect(outcome.code).toBe(0);
    expect(outcome.rssMb - baseline.rssMb).toBeLessThan((12 * size) / 2 ** 20);
  });
});
