/**
 * `allot-lab oom FILE...`: the long post-mortem of each recorded out-of-memory error. The recording
 * is replayed with its own settings (PyTorch's defaults when it does not state them) at the wall the
 * error shows, or on the device `--memory` and `--fraction` state.
 */
import type { Trace } from '@allot/workloads';
import type { DeviceModel } from './analysis/device';
import { type OomFigures, oomFigures, postMortem } from './analysis/post-mortem';
import { EXIT_OK, type LabOptions } from './options';
import { postMortemReport } from './report/post-mortem-text';
import { recordedOomLines } from './report/tables';

/** Where `oom` writes. */
interface Io {
  readonly stdout: NodeJS.WritableStream;
}

/** The post-mortem of every recorded out-of-memory error of `trace` (the first one in full). */
export function tracePostMortem(trace: Trace, stated: DeviceModel | undefined): OomFigures[] {
  const figures = oomFigures(trace, stated);
  if (figures.length === 0) return figures;
  const conf = typeof trace.meta.torchAllocConf === 'string' ? trace.meta.torchAllocConf : '';
  figures[0] = { ...figures[0]!, ...postMortem(trace, conf, stated) };
  return figures;
}

/** Runs `oom` on the traces read; returns the exit status. */
export function oomCommand(traces: readonly Trace[], options: LabOptions, io: Io): number {
  const stated =
    options.memory !== null ? { memory: options.memory, fraction: options.fraction } : undefined;
  const results = traces.map((trace) => ({ trace, ooms: tracePostMortem(trace, stated) }));
  if (options.json) {
    const out = results.map(({ trace, ooms }) => ({
      trace: trace.name,
      allocConf: typeof trace.meta.torchAllocConf === 'string' ? trace.meta.torchAllocConf : null,
      ...(ooms.length > 0 ? { oom: ooms[0], recordedOoms: ooms } : { oom: null }),
    }));
    io.stdout.write(`${JSON.stringify({ traces: out }, null, 2)}\n`);
    return EXIT_OK;
  }
  const lines: string[] = [];
  for (const { trace, ooms } of results) {
    if (ooms.length === 0) {
      lines.push(`${trace.name}: no out-of-memory error recorded`, '');
      continue;
    }
    const conf = trace.meta.torchAllocConf;
    const settings =
      typeof conf === 'string'
        ? `recorded with PYTORCH_CUDA_ALLOC_CONF='${conf}'`
        : "the recording does not state its settings: PyTorch's defaults assumed";
    lines.push(
      ...postMortemReport(`${trace.name}: ${settings}`, ooms[0]!, recordedOomLines(ooms[0]!)),
    );
    for (const later of ooms.slice(1)) lines.push('', ...recordedOomLines(later));
    lines.push('');
  }
  io.stdout.write(`${lines.join('\n')}\n`);
  return EXIT_OK;
}
