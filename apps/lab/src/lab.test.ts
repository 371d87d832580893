import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachingPool } from '@allot/caching';
import { toTorchSnapshotPickle, withStats } from '@allot/stats';
import {
  addressSource,
  formatCsvTrace,
  formatRmmLog,
  inferenceServing,
  replay,
} from '@allot/workloads';
import { findTracesDir } from '@allot/workloads/node';
import { describe, expect, it } from 'vitest';
import { lab } from './lab';
import { EXIT_BAD_INPUT, EXIT_FAILED_ALLOCATIONS, EXIT_OK } from './options';
import { Capture } from './test-capture';

async function run(argv: string[], cwd?: string) {
  const stdout = new Capture();
  const stderr = new Capture();
  const status = await lab(argv, { stdout, stderr, ...(cwd ? { cwd } : {}) });
  return { status, stdout: stdout.text, stderr: stderr.text };
}

const here = dirname(fileURLToPath(import.meta.url));
const workloadFixtures = join(
  here,
  '..',
  '..',
  '..',
  'packages',
  'workloads',
  'src',
  'readers',
  'fixtures',
);

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'allot-lab-'));
}

describe('allot-lab', () => {
  it('prints its version with --version and -V', async () => {
    const version = JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8')).version;
    for (const flag of ['--version', '-V']) {
      const result = await run([flag]);
      expect(result.status).toBe(EXIT_OK);
      expect(result.stdout).toBe(`allot-lab ${version}\n`);
    }
  });

  it('prints help and the list, exit 0', async () => {
    const help = await run(['--help']);
    expect(help.status).toBe(EXIT_OK);
    expect(help.stdout).toMatch(/^allot-lab: replay allocation workloads/);
    const list = await run(['list']);
    expect(list.stdout).toMatch(/caching-expandable\s+pool/);
    expect(list.stdout).toMatch(/training\s+12 layers/);
    // Text columns are left-aligned: no description pushed far right by a long neighbour.
    expect(list.stdout).not.toMatch(/ {40}/);
    expect(list.stdout).toMatch(/\n {2}best-fit +range +bestFit\(/);
  });

  it('exits 2 with a message for bad arguments, missing files and malformed traces', async () => {
    const bad = await run(['--allocators', 'nope']);
    expect(bad.status).toBe(EXIT_BAD_INPUT);
    expect(bad.stderr).toMatch(/^allot-lab: unknown allocator 'nope'/);
    const dir = tempDir();
    const missing = await run(['replay', 'missing.trace'], dir);
    expect(missing.status).toBe(EXIT_BAD_INPUT);
    expect(missing.stderr).toMatch(/cannot read missing\.trace: no such file/);
    writeFileSync(join(dir, 'bad.trace'), 'Alloc(8),\nFree(3),\n');
    const malformed = await run(['replay', 'bad.trace'], dir);
    expect(malformed.status).toBe(EXIT_BAD_INPUT);
    expect(malformed.stderr).toMatch(/bad\.trace:2: expected Free\(k\) of a live block/);
    writeFileSync(join(dir, 'unknown.txt'), 'hello\n');
    const unknown = await run(['replay', 'unknown.txt'], dir);
    expect(unknown.status).toBe(EXIT_BAD_INPUT);
    expect(unknown.stderr).toMatch(
      /unknown\.txt: not a PyTorch memory snapshot, .* it is text whose first line is "hello"/,
    );
    writeFileSync(join(dir, 'empty.pickle'), '');
    expect((await run(['replay', 'empty.pickle'], dir)).stderr).toMatch(
      /empty\.pickle: not a PyTorch memory snapshot, .* it is an empty file\n$/,
    );
    writeFileSync(
      join(dir, 'image.pickle'),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10, 0, 0xff]),
    );
    expect((await run(['replay', 'image.pickle'], dir)).stderr).toMatch(
      /image\.pickle: .* it is a file that starts with bytes 89 50 4E 47 0D 0A 1A 0A …: a PNG image\n$/,
    );
  });

  it('runs the built-in workloads, prints tables and targets, writes the report', async () => {
    const dir = tempDir();
    const result = await run(
      ['--quick', '--workloads', 'training,larson', '--allocators', 'best-fit,caching', '--quiet'],
      dir,
    );
    expect(result.status).toBe(EXIT_OK);
    expect(result.stdout).toMatch(/Transformer training loop \(GPT-2 small shape\)/);
    expect(result.stdout).toMatch(/budget: parameters 124\.4 M · weights 237 MiB/);
    expect(result.stdout).toMatch(/best-fit\s+[\d.]+ GiB\s+[\d.]+ GiB\s+1\.\d{3}×/);
    expect(result.stdout).toMatch(/Targets\n\s+replay speed, best-fit on the training workload/);
    expect(result.stdout).toContain(`Report: ${join(dir, 'lab-report', 'index.html')}`);
    const results = JSON.parse(readFileSync(join(dir, 'lab-report', 'results.json'), 'utf8'));
    expect(results.workloads.map((w: { id: string }) => w.id)).toEqual(['training', 'larson']);
    expect(results.workloads[0].rows[0].series.event.length).toBeGreaterThan(100);
    expect(readFileSync(join(dir, 'lab-report', 'index.html'), 'utf8')).toMatch(/^<!doctype html>/);
  });

  it('prints machine-readable JSON with --json, and exits 1 when allocations fail', async () => {
    const dir = tempDir();
    const trace = inferenceServing({ requests: 12, seed: 2 });
    writeFileSync(join(dir, 'serve.csv'), formatCsvTrace(trace));
    const ok = await run(['replay', 'serve.csv', '--json', '--no-report', '--quiet'], dir);
    expect(ok.status).toBe(EXIT_OK);
    const json = JSON.parse(ok.stdout);
    expect(json.tool).toBe('allot-lab');
    expect(json.workloads[0].rows).toHaveLength(8);
    expect(json.workloads[0].rows[0].series).toBeUndefined();
    expect(existsSync(join(dir, 'lab-report'))).toBe(false);

    const tight = await run(
      ['replay', 'serve.csv', '--capacity', '1MiB', '--no-report', '--quiet'],
      dir,
    );
    expect(tight.status).toBe(EXIT_FAILED_ALLOCATIONS);
    expect(tight.stdout).toMatch(/allocations failed in this run \(exit status 1\)/);
    expect(tight.stderr).toMatch(/allocations failed \(exit status 1\)/);
  });

  it('replays a PyTorch snapshot pickle our own pool wrote, with PyTorch’s segments beside ours', async () => {
    const dir = tempDir();
    const pool = withStats(cachingPool({ source: addressSource() }), { trace: true });
    replay(inferenceServing({ requests: 10, seed: 6 }), pool);
    writeFileSync(join(dir, 'snapshot.pickle'), toTorchSnapshotPickle(pool));
    const result = await run(['replay', 'snapshot.pickle', '--no-report', '--quiet'], dir);
    expect(result.status).toBe(EXIT_OK);
    expect(result.stdout).toMatch(/torch-snapshot file snapshot\.pickle, device 0/);
    // Our caching row makes the same decisions PyTorch's (here: our pool's) recording shows.
    const torch = /PyTorch \(recorded\)\s+–\s+(\S+ \S+)\s+\S+\s+–\s+\S+ oom\s+–\s+(\d+)/.exec(
      result.stdout,
    );
    expect(torch).not.toBeNull();
    const ours = /\n\s+caching\s+\S+ \S+\s+(\S+ \S+)\s+.*\s(\d+)\n/.exec(result.stdout);
    expect(ours![1]).toBe(torch![1]);
    expect(ours![2]).toBe(torch![2]);
  });

  it('adds a caching row per --config, each carrying its config, and the recorded settings', async () => {
    const dir = tempDir();
    const pool = withStats(
      cachingPool({ source: addressSource(), config: 'max_split_size_mb:64' }),
      {
        trace: true,
      },
    );
    replay(inferenceServing({ requests: 10, seed: 6 }), pool);
    writeFileSync(join(dir, 'snapshot.pickle'), toTorchSnapshotPickle(pool));
    const result = await run(
      [
        'replay',
        'snapshot.pickle',
        '--allocators',
        'best-fit,caching',
        '--config',
        'expandable_segments:True',
        '--config=roundup_power2_divisions:4',
        '--json',
        '--no-report',
        '--quiet',
      ],
      dir,
    );
    expect(result.status).toBe(EXIT_OK);
    const workload = JSON.parse(result.stdout).workloads[0];
    expect(
      workload.rows.map((row: { allocator: string; config?: string }) => [
        row.allocator,
        row.config,
      ]),
    ).toEqual([
      ['best-fit', undefined],
      ['caching', ''],
      ['caching (expandable_segments:True)', 'expandable_segments:True'],
      ['caching (roundup_power2_divisions:4)', 'roundup_power2_divisions:4'],
      ['caching-recorded', 'max_split_size_mb:64'],
    ]);
    // The recorded settings replay the recording: the pool that wrote it made these decisions.
    const fidelity = workload.torch.fidelity;
    expect(fidelity.allocator).toBe('caching-recorded');
    expect(fidelity.error).toBe(0);
    expect(fidelity.segments.matchFraction).toBe(1);
    const bad = await run(
      ['replay', 'snapshot.pickle', '--config', 'expandable_segments:yes'],
      dir,
    );
    expect(bad.status).toBe(EXIT_BAD_INPUT);
    expect(bad.stderr).toMatch(/--config 'expandable_segments:yes'/);
  });

  it('replays a profiler trace’s CUDA devices, and others with --device', async () => {
    const file = join(workloadFixtures, 'profiler.json');
    const json = async (argv: string[]) =>
      JSON.parse(
        (await run(['replay', file, '--json', '--no-report', '--quiet', ...argv])).stdout,
      ).workloads.map((w: { meta: { device: string } }) => w.meta.device);
    expect(await json([])).toEqual(['cuda:0']);
    expect(await json(['--device', 'cpu'])).toEqual(['cpu:-1']);
    expect(await json(['--device', 'all'])).toEqual(['cuda:0', 'cpu:-1']);
    expect(await json(['--device', 'cuda:0,cpu'])).toEqual(['cuda:0', 'cpu:-1']);
    const none = await run(['replay', file, '--device', 'cuda:7']);
    expect(none.status).toBe(EXIT_BAD_INPUT);
    expect(none.stderr).toMatch(/no trace on --device cuda:7: it has cuda:0, cpu:-1/);
    expect((await run(['replay', file, '--device', 'gpu 0'])).status).toBe(EXIT_BAD_INPUT);
  });

  it('replays a profiler trace and an RMM log', async () => {
    const profiler = await run([
      'replay',
      join(workloadFixtures, 'profiler.json'),
      '--no-report',
      '--quiet',
    ]);
    expect(profiler.status).toBe(EXIT_OK);
    expect(profiler.stdout).toMatch(/profiler\.json#cuda:0/);
    expect(profiler.stdout).toMatch(/PyTorch \(recorded\)/);
    expect(profiler.stdout).toMatch(/starting state \(estimated\)/);
    expect(profiler.stdout).toMatch(/fidelity: caching replays PyTorch's defaults/);
    const dir = tempDir();
    writeFileSync(join(dir, 'rmm.csv'), formatRmmLog(inferenceServing({ requests: 5 })));
    const rmm = await run(
      ['replay', 'rmm.csv', '--no-report', '--quiet', '--allocators', 'buddy'],
      dir,
    );
    expect(rmm.status).toBe(EXIT_OK);
    expect(rmm.stdout).toMatch(/rmm file rmm\.csv/);
  });

  it('tunes and finds capacities on a trace file', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'serve.csv'),
      formatCsvTrace(inferenceServing({ requests: 30, layers: 8, hidden: 1024, seed: 5 })),
    );
    const tuned = await run(['tune', 'serve.csv', '--quiet'], dir);
    expect(tuned.status).toBe(EXIT_OK);
    expect(tuned.stdout).toMatch(/\nPYTORCH_CUDA_ALLOC_CONF=\S+\n/);
    expect(tuned.stdout).toMatch(/saved \(\d+\.\d %\)/);
    const capacity = await run(
      ['capacity', 'serve.csv', '--allocators', 'best-fit,buddy', '--quiet'],
      dir,
    );
    expect(capacity.status).toBe(EXIT_OK);
    expect(capacity.stdout).toMatch(
      /best-fit\s+\S+ \S+\s+\S+ \S+\s+1\.\d{3}×\s+\d+\s+within 0\.5 %/,
    );
  });

  const traces = findTracesDir();
  const gcc = traces ? join(traces, 'malloc-real-programs', 'gcc-hello.trace') : null;
  if (!gcc || !existsSync(gcc)) {
    console.warn(
      'allot-lab: ../shared/traces/malloc-real-programs/gcc-hello.trace not found, skipping',
    );
  }
  it.skipIf(!gcc || !existsSync(gcc))('replays gcc-hello.trace from ../shared/traces', async () => {
    const result = await run(['replay', gcc!, '--no-report', '--quiet']);
    expect(result.status).toBe(EXIT_OK);
    expect(result.stdout).toMatch(/gcc-hello\.trace\n\s+malloc file gcc-hello\.trace/);
    expect(result.stdout).toMatch(/17,775 events/);
    const bestFit = /\n\s+best-fit\s+\S+ \S+\s+\S+ \S+\s+(\d\.\d{3})×/.exec(result.stdout);
    expect(Number(bestFit![1])).toBeLessThan(1.1);
  });
});
