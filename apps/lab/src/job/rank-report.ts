/**
 * A rank's own report, written by the worker that read the rank while it still holds the trace:
 * the lab's usual page (timeline, the pool at the peak, the diagnosis, fidelity) for the caching
 * pool under the rank's recorded settings, and under each `--config` (replay) or the defaults
 * (tune), at `OUT/ranks/rank-R/index.html`. No timing (ns/event) and no tuning of its own: the
 * job's page gives the setting for every rank.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type AllocatorSettings, DEFAULT_SETTINGS, parseAllocConf } from '@allot/caching';
import type { Trace } from '@allot/workloads';
import type { DeviceModel } from '../analysis/device';
import { cachingRow, type LabRow } from '../analysis/registry';
import { writeReportFile } from '../report/report-file';
import { labResults, runWorkloads } from '../run';
import { canonicalConf } from './candidates';

/** What a rank's page needs of its task (rank.ts's `RankTask`). */
export interface RankReportTask {
  readonly rank: number;
  readonly file: string;
  readonly mode: 'replay' | 'tune';
  readonly configs: readonly string[];
}

/** Where rank `rank`'s page goes under the job's report folder, relative to it. */
export function rankReportPath(rank: number): string {
  return `ranks/rank-${rank}/index.html`;
}

/** The rows of a rank's page, and which one holds the recorded settings. */
function rowsOf(trace: Trace, task: RankReportTask): { rows: LabRow[]; recordedRow?: string } {
  const conf = trace.meta.torchAllocConf;
  const recorded = typeof conf === 'string' ? canonicalConf(conf) : '';
  const rows: LabRow[] = [];
  const add = (name: string, settings: AllocatorSettings, config: string) => {
    if (!rows.some((row) => row.config === config))
      rows.push(cachingRow(name, settings, undefined, config));
  };
  if (recorded !== null) {
    add(recorded === '' ? 'caching' : 'caching-recorded', parseAllocConf(recorded), recorded);
  }
  if (task.mode === 'tune') add('caching', DEFAULT_SETTINGS, '');
  else
    for (const text of task.configs)
      add(`caching (${text})`, parseAllocConf(text), canonicalConf(text) ?? text);
  const row = recorded === null ? undefined : rows[0]!.name;
  return { rows, ...(row !== undefined ? { recordedRow: row } : {}) };
}

/** Writes the rank's page (see the module comment) under `folder`; returns its path. */
export function writeRankReport(
  trace: Trace,
  task: RankReportTask,
  folder: string,
  device: DeviceModel,
): string {
  const { rows, recordedRow } = rowsOf(trace, task);
  const workloads = runWorkloads(
    [
      {
        id: trace.name,
        title: `rank ${task.rank}: ${task.file}`,
        description: `rank ${task.rank} of a job, ${trace.meta.format ?? 'trace'} file ${task.file}`,
        trace,
        extraRows: rows,
        ...(recordedRow !== undefined ? { recordedRow } : {}),
      },
    ],
    [],
    null,
    undefined,
    device,
    { skipTiming: true },
  );
  const results = labResults(
    {
      command: `allot-lab ${task.mode} (a job's rank ${task.rank})`,
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
    },
    workloads,
  );
  const path = join(folder, rankReportPath(task.rank));
  mkdirSync(join(path, '..'), { recursive: true });
  writeReportFile(path, results);
  return path;
}
