/**
 * One question, one answer: on every recording in `../shared/traces` (the H100 runs and the public
 * files) that `tune` reads, `allot-lab tune FILE --json` and the report's data (`replay FILE --json`,
 * the `explain` the report draws) give the same advice: the same setting, the same saving, the same
 * reason, in the same words. The web app's tuner is checked against `tune --json` the same way
 * (`apps/web/test/advice-agreement.browser.test.ts`). A state dump (a snapshot with no history,
 * as the two `state-dump-*` files of the public folder are) is tuned too, on an estimate: its advice
 * must agree the same way, and both must mark it an estimate and say what it assumes. A file `tune`
 * refuses (exit status 2) is named and has no advice to compare. Runs the built CLI; skips, with a
 * message, when the recordings are absent.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findTracesDir } from '@allot/workloads/node';
import { describe, expect, it } from 'vitest';
import { recordingsToTune } from '../test/recordings';
import type { Advice } from './analysis/advice';

const cli = join(import.meta.dirname, '..', 'bin', 'allot-lab.js');
const shared = findTracesDir();
const files = shared === null ? [] : recordingsToTune(shared);
if (files.length === 0) console.warn('advice agreement skipped: no ../shared/traces recordings');

/** `allot-lab ARGS...`: its exit status and standard output. */
async function run(args: readonly string[]): Promise<{ status: number; stdout: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [cli, ...args], {
      maxBuffer: 1 << 28,
    });
    return { status: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { status: failed.code, stdout: failed.stdout };
  }
}

/** What must agree: the setting, the figures and the words. */
function essence(advice: Advice) {
  const { config, reason, headline, summary, because, savingBytes, peakReservedBytes } = advice;
  return {
    config,
    reason,
    headline,
    summary,
    because,
    savingBytes,
    peakReservedBytes,
    defaultsPeakReservedBytes: advice.defaultsPeakReservedBytes,
    estimate: advice.estimate ?? false,
  };
}

describe.skipIf(files.length === 0 || !existsSync(cli))('tune --json and the report', () => {
  it.each(files)('%s: the same advice, saving and reason', async (file) => {
    const replaying = run([
      'replay',
      file,
      '--json',
      '--quiet',
      '--no-report',
      '--allocators',
      'caching,caching-tuned',
    ]);
    const tuned = await run(['tune', file, '--json', '--quiet']);
    if (tuned.status === 2) {
      console.warn(
        `${file}: tune reads no recording in it (exit status 2), so no advice to compare`,
      );
      await replaying;
      return;
    }
    const search = JSON.parse(tuned.stdout) as {
      trace: string;
      allocConf: string | null;
      advice: Advice;
    };
    expect(search.allocConf).toBe(search.advice.config);
    const replayed = await replaying;
    expect([0, 1]).toContain(replayed.status);
    const workloads = JSON.parse(replayed.stdout).workloads as {
      id: string;
      explain: { advice: Advice; diagnosis: { advice: string } };
    }[];
    const report = workloads.find((workload) => workload.id === search.trace)!;
    expect(essence(report.explain.advice)).toEqual(essence(search.advice));
    // The paragraph the report shows (and replay prints under its table) says it in those words.
    expect(report.explain.diagnosis.advice).toContain(search.advice.summary);
    expect(report.explain.diagnosis.advice).toContain(search.advice.because);
    if (search.advice.estimate)
      expect(search.advice.because).toContain('An estimate, not a replay');
    // Its figures add up: the saving is the defaults' figure it names, less the setting's.
    const { advice } = search;
    expect(advice.savingBytes).toBe(
      advice.config === '' || advice.config === null
        ? 0
        : advice.defaultsPeakReservedBytes - advice.peakReservedBytes,
    );
  });
});
