/**
 * The lab kept open on a few traces: what the web app's worker runs. Traces are read once from
 * streams of bytes (a browser `File`, a fetch body) and kept; each what-if (a
 * `PYTORCH_CUDA_ALLOC_CONF`, the card's memory and per-process fraction) replays them as
 * `allot-lab replay FILE --config CONF --memory M --fraction F` would, with the caching rows, the
 * row of the recording's own settings and a row for the what-if, and answers with the results the
 * report draws (`@allot/lab/report` makes its page data, which the web app's page also reads its
 * figures from). A row already measured under the same device is not measured again, so a new
 * setting costs one row's replay per trace.
 *
 * ```
 *  chunks ─► streamTraces (@allot/workloads; gunzip by DecompressionStream) ─► add()
 *  what-if ─► rows: caching, caching-expandable, the recorded row, caching (CONF) ─► runWorkloads
 *           (memo: rows kept per trace and device; no timing) ─► LabResults and the command line
 * ```
 */
import { formatAllocConf, parseAllocConf } from '@allot/caching';
import type { Trace } from '@allot/workloads';
import type { RowResult } from './analysis/measure';
import { cachingRow, type LabRow, ROWS } from './analysis/registry';
import type { TuneResult } from './analysis/tune';
import { canonicalOf, describeTrace, replayRows } from './replay-rows';
import { type LabResults, labResults, runWorkloads } from './run';

/** A setting and a device to replay the traces under. */
export interface WhatIf {
  /** The `PYTORCH_CUDA_ALLOC_CONF` of the what-if row. */
  readonly config: string;
  /** The GPU's memory in bytes (`--memory`), or null when not stated. */
  readonly memory: number | null;
  /** The per-process memory fraction (`--fraction`), or null for none; needs `memory`. */
  readonly fraction: number | null;
}

/** The answer to a what-if. */
export interface WhatIfAnswer {
  readonly results: LabResults;
  /** The what-if's canonical `PYTORCH_CUDA_ALLOC_CONF`. */
  readonly config: string;
  /** The command line that gives the same figures. */
  readonly command: string;
}

/**
 * A copy of `trace` without its stack frames: what a search of settings needs, small enough to
 * hand to another worker.
 */
export function withoutFrames(trace: Trace): Trace {
  const { frames: _frames, ...rest } = trace;
  return rest;
}

/** The caching rows every trace gets: PyTorch's defaults and expandable segments. */
const POOL_ROWS: readonly LabRow[] = ROWS.filter(
  (row) => row.kind === 'pool' && row.name !== 'caching-tuned',
);

interface Kept {
  readonly trace: Trace;
  readonly file: string;
  tuning?: TuneResult;
}

/** The traces of a page, kept between replays (see the module comment). */
export class WhatIfLab {
  private readonly kept: Kept[] = [];
  /** Rows measured per trace under {@link deviceKey}, by name and setting. */
  private readonly measured = new WeakMap<Trace, Map<string, RowResult>>();
  private deviceKey = '';

  /** The traces kept, in the order they were added. */
  get traces(): readonly Trace[] {
    return this.kept.map((kept) => kept.trace);
  }

  /** Keeps the traces of one file. */
  add(traces: readonly Trace[], file: string): void {
    for (const trace of traces) this.kept.push({ trace, file });
  }

  /**
   * Forgets `traces` (a file taken away): the others keep their order and what was measured of
   * them. A trace not kept is ignored.
   */
  remove(traces: readonly Trace[]): void {
    const gone = new Set(traces);
    for (let k = this.kept.length - 1; k >= 0; k--) {
      const { trace } = this.kept[k]!;
      if (!gone.has(trace)) continue;
      this.kept.splice(k, 1);
      this.measured.delete(trace);
    }
  }

  /** The tuner's search on trace `index` (see {@link traces}), for the report's advice. */
  setTuning(index: number, tuning: TuneResult | undefined): void {
    const kept = this.kept[index];
    if (kept === undefined) return;
    if (tuning === undefined) delete kept.tuning;
    else kept.tuning = tuning;
  }

  /** Replays every trace under `whatIf` (see the module comment). */
  replay(whatIf: WhatIf, createdAt = new Date().toISOString()): WhatIfAnswer {
    if (whatIf.fraction !== null && whatIf.memory === null) {
      throw new Error("a per-process memory fraction needs the card's memory it is a fraction of");
    }
    const settings = parseAllocConf(whatIf.config);
    const config = formatAllocConf(settings);
    const device = { memory: whatIf.memory, fraction: whatIf.fraction };
    const key = JSON.stringify(device);
    if (key !== this.deviceKey) {
      for (const { trace } of this.kept) this.measured.delete(trace);
      this.deviceKey = key;
    }
    const inputs = this.kept.map(({ trace, tuning }) => {
      const { extraRows, recordedRow } = replayRows(trace, POOL_ROWS, []);
      const known = [...POOL_ROWS, ...extraRows].some(
        (row) => canonicalOf(row.config ?? '') === config,
      );
      const rows = known
        ? extraRows
        : [...extraRows, cachingRow(`caching (${whatIf.config})`, settings, undefined, config)];
      return {
        id: trace.name,
        title: trace.name,
        description: describeTrace(trace),
        trace,
        extraRows: rows,
        ...(recordedRow !== undefined ? { recordedRow } : {}),
        ...(tuning ? { tuning } : {}),
      };
    });
    const workloads = runWorkloads(inputs, POOL_ROWS, null, undefined, device, {
      skipTiming: true,
      memo: (trace, row, measure) => {
        let rows = this.measured.get(trace);
        if (rows === undefined) this.measured.set(trace, (rows = new Map()));
        const name = `${row.name}\n${row.config ?? ''}`;
        const result = rows.get(name) ?? measure();
        rows.set(name, result);
        return result;
      },
    });
    const command = commandLine([...new Set(this.kept.map((kept) => kept.file))], config, whatIf);
    const results = labResults(
      { command, createdAt, node: 'none (a browser)', platform: 'browser' },
      workloads,
    );
    return { results, config, command };
  }
}

/** `allot-lab replay FILES...` with the options that give the what-if's figures. */
function commandLine(files: readonly string[], config: string, whatIf: WhatIf): string {
  const quote = (text: string) => (/^[\w.,:/=+-]+$/.test(text) ? text : `'${text}'`);
  const parts = ['allot-lab', 'replay', ...files.map(quote)];
  if (config !== '') parts.push('--config', quote(config));
  if (whatIf.memory !== null) parts.push('--memory', String(whatIf.memory));
  if (whatIf.fraction !== null) parts.push('--fraction', String(whatIf.fraction));
  return parts.join(' ');
}
