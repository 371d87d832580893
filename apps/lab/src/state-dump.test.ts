/**
 * State dumps (`torch.cuda.memory._snapshot()` with no history) under `replay` and `tune`: on a
 * hand-built dump with stacks, the public dumps of `../shared/traces/public` (one in PyTorch 2.0's
 * format) and a dump made of every H100 recording (`test/state-dumps.ts`), `replay` exits 0 and
 * gives reserved and allocated equal to the dump's own segments, the largest free block, who holds
 * the memory by source line, and each setting's figure marked as an estimate with what it assumes.
 * One replay a dump; the shared files are skipped, with a message, when absent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findTracesDir, readTraces } from '@allot/workloads/node';
import { afterAll, describe, expect, it } from 'vitest';
import { handBuiltDump, stateDumpCases } from '../test/state-dumps';
import { type Advice, adviceOf } from './analysis/advice';
import type { DumpFigures } from './analysis/state-dump';
import { tune } from './analysis/tune';
import { lab } from './lab';
import { EXIT_BAD_INPUT, EXIT_OK } from './options';
import { Capture } from './test-capture';

async function run(argv: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const status = await lab(argv, { stdout, stderr });
  return { status, stdout: stdout.text, stderr: stderr.text };
}

const dir = mkdtempSync(join(tmpdir(), 'allot-lab-dumps-'));
const shared = findTracesDir();
if (shared === null) console.warn('state dumps of ../shared/traces skipped: not found');
const cases = await stateDumpCases(dir, shared);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface DumpWorkload {
  readonly id: string;
  readonly dump: Omit<DumpFigures, 'layout'>;
  readonly explain: {
    readonly advice?: Advice;
    readonly peak: { readonly bySource: { frame: string; bytes: number; blocks: number }[] };
    readonly diagnosis: { readonly advice?: string };
  };
}

describe('replay on a state dump', () => {
  it.each(cases)(
    '$name: the dump’s own figures, its holders, the estimate marked',
    async (dump) => {
      const result = await run(['replay', dump.path, '--json', '--quiet', '--no-report']);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(EXIT_OK);
      const workloads = JSON.parse(result.stdout).workloads as DumpWorkload[];
      expect(workloads).toHaveLength(dump.devices.length);
      workloads.forEach((workload, device) => {
        const expected = dump.devices[device]!;
        const figures = workload.dump;
        expect(figures.reservedBytes).toBe(expected.reservedBytes);
        expect(figures.allocatedBytes).toBe(expected.allocatedBytes);
        expect(figures.segments).toBe(expected.segments);
        expect(figures.allocatedBlocks + figures.pendingFreeBlocks).toBe(expected.liveBlocks);
        expect(figures.largestFree?.bytes ?? 0).toBe(expected.largestFreeBytes);
        // Free bytes are fragmented or cached, and with the live ones make up what is reserved.
        expect(figures.fragmentedBytes + figures.cachedBytes).toBe(figures.freeBytes);
        expect(figures.allocatedBytes + figures.pendingFreeBytes + figures.freeBytes).toBe(
          figures.reservedBytes,
        );
        // Who holds the memory, by source line: each line with the bytes of its blocks.
        const holders = workload.explain.peak.bySource;
        expect(holders.length).toBe(expected.bySource.size);
        for (const [line, bytes] of expected.bySource) {
          const holder = holders.find((h) => h.frame.endsWith(`(${line})`));
          expect(holder, `${line} in ${holders.map((h) => h.frame).join(', ')}`).toBeDefined();
          expect(holder!.bytes).toBe(bytes);
        }
        // Every figure under a setting is an estimate, and says what it assumes.
        const { estimate } = figures;
        expect(estimate.estimate).toBe(true);
        expect(estimate.order).toBe('address');
        expect(estimate.blocks).toBe(expected.liveBlocks);
        expect(estimate.assumes).toMatch(/^An estimate, not a replay: .* in address order/);
        expect(estimate.rows.map((row) => row.allocator)).toContain('caching');
        const advice = workload.explain.advice!;
        expect(advice.summary).toMatch(/^(No allocation fails.*; estimated|Estimated) peak/);
        expect(advice.because).toContain(estimate.assumes);
        expect(workload.explain.diagnosis.advice).toContain(estimate.assumes);
      });
    },
  );
});

describe('a state dump in the terminal', () => {
  const hand = cases[0]!.path;

  it('replay prints the dump’s figures, its holders and the estimate, marked', async () => {
    const result = await run(['replay', hand, '--quiet', '--no-report']);
    expect(result.status).toBe(EXIT_OK);
    const text = result.stdout;
    expect(text).toContain('A state dump: the segments and blocks of one moment');
    expect(text).toContain('Reserved 62.0 MiB in 3 segments; allocated 28.0 MiB in 3 blocks');
    expect(text).toContain('4.00 KiB in 1 block freed and waiting for another stream');
    expect(text).toMatch(/the largest free block 20\.0 MiB/);
    expect(text).toMatch(/who holds the memory at the dump \(28\.0 MiB live\)/);
    expect(text).toMatch(/16\.0 MiB .* attention \(model\.py:88\)/);
    expect(text).toMatch(/12\.0 MiB .* embed \(model\.py:40\)/);
    expect(text).toContain('what the same live blocks would need under each setting, an estimate');
    expect(text).toMatch(/caching \(defaults\) +[\d.]+ MiB \(estimated\)/);
    expect(text).toContain('the dump, as recorded');
    // No table of the recordings' kind, nor its footnote.
    expect(text).not.toContain('peak reserved: the high-water mark');
  });

  it('tune says every figure is an estimate, in words and in --json', async () => {
    const text = await run(['tune', hand, '--quiet']);
    expect(text.status).toBe(EXIT_OK);
    expect(text.stdout).toMatch(/a state dump, 4 live blocks .* every figure below is an estimate/);
    expect(text.stdout).toContain('An estimate, not a replay');
    const json = await run(['tune', hand, '--json', '--quiet']);
    expect(json.status).toBe(EXIT_OK);
    const result = JSON.parse(json.stdout) as { estimate: { estimate: true }; advice: Advice };
    expect(result.estimate.estimate).toBe(true);
    expect(result.advice.because).toContain('An estimate, not a replay');
  });

  it('a dump with no live block: replay says so, tune refuses clearly', async () => {
    const empty = handBuiltDump();
    const path = join(dir, 'nothing-live.json');
    const free = empty.segments.filter((segment) =>
      segment.blocks.every((block) => block.state === 'inactive'),
    );
    writeFileSync(path, JSON.stringify({ ...empty, segments: free }));
    const replayed = await run(['replay', path, '--quiet', '--no-report']);
    expect(replayed.status).toBe(EXIT_OK);
    expect(replayed.stdout).toContain('Reserved 20.0 MiB in 1 segment; allocated 0 B in 0 blocks');
    expect(replayed.stdout).toContain('No block is live: every reserved byte is free');
    const tuned = await run(['tune', path, '--quiet']);
    expect(tuned.status).toBe(EXIT_BAD_INPUT);
    expect(tuned.stderr).toMatch(
      /nothing-live\.json is a state dump with no live block \(20\.0 MiB reserved, all of it free\): nothing to estimate/,
    );
    expect(tuned.stdout).toBe('');
    // The web app's tuner, which searches every trace it holds, keeps the defaults, saying why.
    const [trace] = await readTraces(path);
    const advice = adviceOf(tune(trace!));
    expect(advice.config).toBe('');
    expect(advice.because).toBe(
      'No block is live in the dump: every reserved byte is free, so there is nothing to estimate under another setting.',
    );
  });
});
