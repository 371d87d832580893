import { describe, expect, it } from 'vitest';
import { ROW_NAMES } from './analysis/registry';
import { HELP } from './help-text';
import { parseArguments, UsageError } from './options';
import { formatBytes, parseSize } from './units';

function usageError(argv: string[]): string {
  try {
    parseArguments(argv);
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  throw new Error('expected a UsageError');
}

describe('parseSize', () => {
  it('reads GB as 10^9 bytes and GiB as 2^30', () => {
    expect(parseSize('80GB')).toBe(80e9);
    expect(parseSize('80GiB')).toBe(80 * 2 ** 30);
    expect(parseSize('512MB')).toBe(512e6);
    expect(parseSize('512mib')).toBe(512 * 2 ** 20);
    expect(parseSize('16g')).toBe(16 * 2 ** 30);
  });
});

describe('parseArguments: the device and what-if settings', () => {
  it('parses each --config once, here at the edge, and --memory with --fraction', () => {
    const options = parseArguments([
      'replay',
      'a.pickle',
      '--config',
      'expandable_segments:True',
      '--config=max_split_size_mb:128',
      '--memory',
      '80GiB',
      '--fraction',
      '0.5',
    ]);
    expect(options.configs.map((config) => config.text)).toEqual([
      'expandable_segments:True',
      'max_split_size_mb:128',
    ]);
    expect(options.configs[0]!.settings.expandableSegments).toBe(true);
    expect(options.configs[1]!.settings.maxSplitSize).toBe(128 * 2 ** 20);
    expect(options).toMatchObject({ memory: 80 * 2 ** 30, fraction: 0.5 });
  });

  it('refuses a bad setting, a fraction out of range, and a fraction with no memory', () => {
    expect(usageError(['replay', 'a', '--config', 'max_split_size_mb:1'])).toMatch(
      /^--config 'max_split_size_mb:1': /,
    );
    expect(usageError(['replay', 'a', '--memory', '8GiB', '--fraction', '1.5'])).toMatch(
      /--fraction expects a number in \(0, 1\]/,
    );
    expect(usageError(['replay', 'a', '--fraction', '0.5'])).toMatch(/--fraction needs --memory/);
    expect(usageError(['tune', '--config', 'expandable_segments:True'])).toMatch(
      /--config is an option of replay/,
    );
    expect(parseArguments(['tune', '--fraction', '0.5']).fraction).toBe(0.5);
  });
});

describe('parseArguments', () => {
  it('runs the built-in workloads through every allocator by default', () => {
    const options = parseArguments([]);
    expect(options.command).toBe('run');
    expect(options.allocators).toEqual(ROW_NAMES);
    expect(options.workloads).toEqual(['training', 'inference', 'larson']);
    expect(options).toMatchObject({ capacity: null, out: 'lab-report', report: true, seed: 1 });
  });

  it('reads commands, files and every option, in both --name value and --name=value forms', () => {
    const options = parseArguments([
      'replay',
      'a.trace',
      'b.csv',
      '--allocators=caching,best-fit,best-fit',
      '--capacity',
      '512MiB',
      '--out',
      'here',
      '--json',
      '--no-report',
      '--format',
      'malloc',
      '--quiet',
    ]);
    expect(options.command).toBe('replay');
    expect(options.files).toEqual(['a.trace', 'b.csv']);
    expect(options.allocators).toEqual(['best-fit', 'caching']); // table order, no repeats
    expect(options.capacity).toBe(512 * 2 ** 20);
    expect(options).toMatchObject({ out: 'here', json: true, report: false, format: 'malloc' });
    expect(parseArguments(['--seed', '7', '--quick', '--workloads', 'larson'])).toMatchObject({
      seed: 7,
      quick: true,
      workloads: ['larson'],
    });
    expect(parseArguments(['tune', 'x.pickle', '--memory', '80GiB']).memory).toBe(80 * 2 ** 30);
    expect(parseArguments(['replay', 'x', '-h']).command).toBe('help');
  });

  it('says what was expected for every mistake', () => {
    expect(usageError(['--frobnicate'])).toMatch(/unknown option '--frobnicate'/);
    expect(usageError(['--allocators', 'best-fit,tlsf'])).toMatch(
      /unknown allocator 'tlsf': expected one of first-fit, best-fit/,
    );
    expect(usageError(['--workloads', 'mnist'])).toMatch(/unknown workload 'mnist'/);
    expect(usageError(['--capacity', 'lots'])).toMatch(/--capacity expects a size such as 80GiB/);
    expect(usageError(['--seed', '-1'])).toMatch(/--seed needs a value|--seed expects/);
    expect(usageError(['--seed', 'x'])).toMatch(/--seed expects a non-negative integer/);
    expect(usageError(['--out'])).toMatch(/--out needs a value/);
    expect(usageError(['replay'])).toMatch(/replay needs at least one trace file/);
    expect(usageError(['capacity', 'a', 'b'])).toMatch(/capacity takes one trace file/);
    expect(usageError(['frobnicate'])).toMatch(/unknown command 'frobnicate'/);
    expect(usageError(['--format', 'pcap', 'replay', 'x'])).toMatch(/--format expects one of/);
    expect(usageError(['--json=yes'])).toMatch(/unknown option '--json=yes'/);
  });

  it('reads --export as a comma list or repeated, for run and replay only', () => {
    expect(parseArguments([]).exports).toEqual([]);
    expect(parseArguments(['replay', 'a', '--export', 'vma,memory-viz']).exports).toEqual([
      'memory-viz',
      'vma',
    ]);
    expect(
      parseArguments(['--export=vma', '--export', 'memory-viz', '--export', 'vma']).exports,
    ).toEqual(['memory-viz', 'vma']);
    expect(usageError(['replay', 'a', '--export', 'svg'])).toMatch(
      /unknown export 'svg': expected one of memory-viz, vma/,
    );
    expect(usageError(['tune', '--export', 'vma'])).toMatch(/--export is an option of replay/);
  });

  it('documents every option and allocator in --help', () => {
    for (const option of [
      '--allocators',
      '--workloads',
      '--capacity',
      '--memory',
      '--format',
      '--out',
      '--no-report',
      '--json',
      '--seed',
      '--quick',
      '--quiet',
      '--export',
      '--help',
    ])
      expect(HELP).toContain(option);
    for (const row of ROW_NAMES) expect(HELP).toContain(row);
    expect(HELP).toMatch(/Exit status/);
  });
});

describe('sizes', () => {
  it('parses binary units and rejects the rest', () => {
    expect(parseSize('4096')).toBe(4096);
    expect(parseSize('64KiB')).toBe(65536);
    expect(parseSize('1.5 GiB')).toBe(1.5 * 2 ** 30);
    expect(parseSize('2t')).toBe(2 * 2 ** 40);
    for (const bad of ['', '0', '-5', '12XB', 'GiB', '1e3']) expect(parseSize(bad), bad).toBeNull();
  });

  it('formats with three significant figures', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(8.39 * 2 ** 30)).toBe('8.39 GiB');
    expect(formatBytes(150 * 2 ** 20)).toBe('150 MiB');
  });
});

describe('parseArguments: a job of many ranks', () => {
  it('reads --jobs, --step, --shard and --force for replay and tune', () => {
    const options = parseArguments([
      'tune',
      'dir',
      '--jobs',
      '3',
      '--step',
      '20',
      '--shard',
      '1/4',
      '--force',
    ]);
    expect(options).toMatchObject({
      jobs: 3,
      step: 20,
      shard: { index: 1, count: 4 },
      force: true,
    });
    const plain = parseArguments(['tune', 'a', 'b']);
    expect(plain.files).toEqual(['a', 'b']);
    expect(plain).toMatchObject({ step: null, shard: null, force: false });
    expect(plain.jobs).toBeGreaterThanOrEqual(1);
  });

  it('refuses a bad --jobs, --step or --shard, and job options elsewhere', () => {
    expect(usageError(['tune', 'd', '--jobs', '0'])).toMatch(
      /--jobs expects a whole number of at least 1/,
    );
    expect(usageError(['tune', 'd', '--step', 'x'])).toMatch(/--step expects a whole number/);
    expect(usageError(['tune', 'd', '--shard', '4/4'])).toMatch(
      /--shard expects I\/N with 0 <= I < N/,
    );
    expect(usageError(['tune', 'd', '--shard', '1'])).toMatch(/--shard expects I\/N/);
    expect(usageError(['capacity', 'd', '--jobs', '2'])).toMatch(
      /--jobs is an option of replay and tune/,
    );
    expect(usageError(['merge'])).toMatch(/merge needs the --json outputs/);
    expect(parseArguments(['merge', 'a.json', 'b.json']).files).toEqual(['a.json', 'b.json']);
  });
});
