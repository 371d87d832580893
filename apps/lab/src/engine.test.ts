/**
 * `@allot/lab/engine`, the lab without Node.js: it bundles for a browser with nothing external and
 * no stub, reaches neither the report nor its client modules (entries of their own), and its
 * WhatIfLab replays a trace to the figures `allot-lab replay --json` prints, as the web app's page
 * reads them from the report's data, measuring a row only once per device.
 */
import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { findTracesDir } from '@allot/workloads/node';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { streamTraces, type WhatIfAnswer, WhatIfLab } from './engine';
import { lab } from './lab';
import { reportData } from './report/page';
import { Capture } from './test-capture';
import { traceBrief } from './ui/what-if-figures';

const here = import.meta.dirname;
const fixture = join(
  here,
  '..',
  '..',
  '..',
  'packages/workloads/src/readers/fixtures/snapshot.json',
);
const trainDefault = (() => {
  const traces = findTracesDir();
  const file = traces === null ? null : join(traces, 'pytorch-h100', 'train-default.pickle.gz');
  if (file !== null && existsSync(file)) return file;
  console.warn(
    'train-default in the browser engine skipped: no pytorch-h100/train-default.pickle.gz',
  );
  return null;
})();

interface ReplayJson {
  workloads: {
    rows: { allocator: string; peakReservedBytes: number }[];
    torch?: { fidelity?: { allocator: string } };
  }[];
}

/** `allot-lab replay FILE ARGS... --json`, in process: the rows by name, and the recorded row. */
async function cliReplay(file: string, ...args: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const status = await lab(
    ['replay', file, '--allocators', 'caching,caching-expandable', '--no-report', '--quiet'].concat(
      args,
      '--json',
    ),
    { stdout, stderr },
  );
  expect(stderr.text).toBe('');
  expect(status).toBe(0);
  const workload = (JSON.parse(stdout.text) as ReplayJson).workloads[0]!;
  return {
    peaks: new Map(workload.rows.map((row) => [row.allocator, row.peakReservedBytes])),
    recorded: workload.torch?.fidelity?.allocator,
  };
}

/** Each trace of `answer` as the web app's page reads it from the report's data. */
function traces(answer: WhatIfAnswer) {
  return reportData(answer.results).workloads.map((workload) =>
    traceBrief(workload, answer.config),
  );
}

async function opened(file: string): Promise<WhatIfLab> {
  const name = file.split('/').pop()!;
  const read = await streamTraces(createReadStream(file), { name });
  const lab = new WhatIfLab();
  lab.add(read, name);
  return lab;
}

describe('@allot/lab/engine', () => {
  it('bundles for a browser with nothing external and no stub, without the report page', async () => {
    const result = await build({
      entryPoints: [join(here, 'engine.ts')],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((input) => input.endsWith('analysis/explain.ts'))).toBe(true);
    expect(inputs.filter((input) => /report\/|ui\/|lab\.ts$|input\.ts$/.test(input))).toEqual([]);
    expect(result.outputFiles[0]!.text).not.toMatch(/\bfrom\s*["'](node:)?[a-z_]+["']/);
  });

  it('replays a snapshot as replay --json does, and measures a row once per device', async () => {
    const cli = await cliReplay(fixture);
    const lab = await opened(fixture);
    const first = lab.replay({ config: '', memory: null, fraction: null });
    const [trace] = traces(first);
    expect(trace!.recorded?.allocator).toBe(cli.recorded);
    expect(trace!.whatIf.peakReservedBytes).toBe(cli.peaks.get(cli.recorded!));
    expect(first.results.workloads[0]!.rows.map((row) => row.allocator)).toEqual([
      ...cli.peaks.keys(),
    ]);

    const max = 'max_split_size_mb:20';
    const second = lab.replay({ config: max, memory: null, fraction: null });
    const withConfig = await cliReplay(fixture, '--config', max);
    expect(second.config).toBe(max);
    expect(traces(second)[0]!.whatIf.allocator).toBe(`caching (${max})`);
    expect(traces(second)[0]!.whatIf.peakReservedBytes).toBe(
      withConfig.peaks.get(`caching (${max})`),
    );
    expect(second.command).toBe(`allot-lab replay snapshot.json --config ${max}`);
    // The rows the first replay measured are kept, not measured again.
    expect(second.results.workloads[0]!.rows[0]).toBe(first.results.workloads[0]!.rows[0]);
    // A device is another question: every row is measured again.
    const card = lab.replay({ config: max, memory: 2 ** 34, fraction: 0.5 });
    expect(card.results.workloads[0]!.rows[0]).not.toBe(first.results.workloads[0]!.rows[0]);
    expect(() => lab.replay({ config: '', memory: null, fraction: 0.5 })).toThrow(/fraction/);
  });

  it('forgets a file taken away: the others keep their order and their figures', async () => {
    const name = 'snapshot.json';
    const [trace] = await streamTraces(createReadStream(fixture), { name });
    const [again] = await streamTraces(createReadStream(fixture), { name });
    const lab = new WhatIfLab();
    lab.add([trace!], 'a.json');
    lab.add([again!], 'b.json');
    const both = lab.replay({ config: '', memory: null, fraction: null });
    lab.remove([trace!]);
    expect(lab.traces).toEqual([again]);
    const one = lab.replay({ config: '', memory: null, fraction: null });
    expect(one.command).toBe('allot-lab replay b.json');
    expect(one.results.workloads).toHaveLength(1);
    // What was measured of the one left is kept.
    expect(one.results.workloads[0]!.rows[0]).toBe(both.results.workloads[1]!.rows[0]);
    // A trace not kept changes nothing.
    lab.remove([trace!]);
    expect(lab.traces).toEqual([again]);
  });

  it.skipIf(trainDefault === null)(
    'gives the recorded row and expandable segments of train-default to the byte',
    async () => {
      const lab = await opened(trainDefault!);
      const cli = await cliReplay(trainDefault!, '--config', 'expandable_segments:True');
      const recorded = traces(lab.replay({ config: '', memory: null, fraction: null }))[0]!;
      expect(recorded.recorded!.allocator).toBe(cli.recorded);
      expect(recorded.whatIf.peakReservedBytes).toBe(cli.peaks.get(cli.recorded!));
      expect(recorded.recordedPeakReservedBytes).toBe(recorded.whatIf.peakReservedBytes);
      const expandable = traces(
        lab.replay({ config: 'expandable_segments:True', memory: null, fraction: null }),
      )[0]!;
      expect(expandable.whatIf.peakReservedBytes).toBe(
        cli.peaks.get('caching (expandable_segments:True)'),
      );
    },
  );
});
