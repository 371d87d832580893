/**
 * The page's workers: one script, two roles, told apart by the first message.
 *
 * - **engine**: reads each file as a stream (a `File`'s `stream()`, or a fetch body for a file the
 *   local server names) through the lab's reader, with progress, keeps the traces in a
 *   `WhatIfLab`, and answers each what-if with the report page of its replay and a brief per
 *   trace. It hands a copy of each trace, without stack frames, to the tuner.
 * - **tuner**: runs the lab's search of settings on each trace, telling the page of every setting
 *   as it is tried. A newer request (other device figures) ends an older one between traces.
 */
import {
  type AllocatorSettings,
  adviceOf,
  describeDevice,
  formatBytes,
  streamTraces,
  type Trace,
  tune,
  WhatIfLab,
  withoutFrames,
} from '@allot/lab/engine';
import { renderReportWith } from '@allot/lab/report';
import { inspector } from './inspect';
import { runJob } from './job-run';
import { knobsOf, recordedSettings, whatIfOf } from './knobs';
import type {
  FileSource,
  FromEngine,
  FromTuner,
  Knobs,
  OpenedTrace,
  ToEngine,
  ToTuner,
  TracesForTuner,
} from './protocol';

interface Scope {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void;
}
const scope = self as unknown as Scope;

/** Progress goes to the page at most this often (ms), and once at the end. */
const PROGRESS_EVERY = 100;

/** A ReadableStream's chunks as an async iterable. */
async function* chunksOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

async function bytesOf(
  source: FileSource,
): Promise<{ name: string; total: number | null; stream: ReadableStream<Uint8Array> }> {
  if (source.kind === 'file') {
    return { name: source.file.name, total: source.file.size, stream: source.file.stream() };
  }
  const response = await fetch(source.url);
  if (!response.ok || response.body === null) {
    throw new Error(`${source.name}: the server answered ${response.status}`);
  }
  const length = Number(response.headers.get('content-length'));
  return {
    name: source.name,
    total: Number.isFinite(length) && length > 0 ? length : null,
    stream: response.body,
  };
}

function deviceMemory(trace: Trace): number | null {
  const bytes = trace.meta.deviceMemoryBytes;
  return typeof bytes === 'number' && bytes > 0 ? bytes : null;
}

/** The engine (see the module comment). */
function engine(): void {
  const lab = new WhatIfLab();
  let tuner: MessagePort | null = null;
  let base: AllocatorSettings | null = null;
  const post = (message: FromEngine) => scope.postMessage(message);
  const inspect = inspector(lab, () => base ?? recordedSettings(null), post);
  let jobSeq = 0;

  async function open(id: number, source: FileSource): Promise<void> {
    const { name, total, stream } = await bytesOf(source);
    let last = 0;
    const traces = await streamTraces(chunksOf(stream), {
      name,
      totalBytes: total,
      onProgress: (progress) => {
        const now = performance.now();
        if (!progress.done && now - last < PROGRESS_EVERY) return;
        last = now;
        const { bytesRead, totalBytes, events } = progress;
        post({ type: 'progress', id, bytesRead, totalBytes, events });
      },
    });
    lab.add(traces, name);
    const opened: OpenedTrace[] = traces.map((trace) => {
      const conf = trace.meta.torchAllocConf;
      const recordedConfig = typeof conf === 'string' ? conf : null;
      return {
        name: trace.name,
        events: trace.length,
        recordedConfig,
        recordedKnobs: knobsOf(recordedSettings(recordedConfig)),
        deviceMemoryBytes: deviceMemory(trace),
      };
    });
    base ??= recordedSettings(opened[0]?.recordedConfig ?? null);
    post({ type: 'opened', id, traces: opened });
    const copies: TracesForTuner = { type: 'traces', traces: traces.map(withoutFrames) };
    tuner?.postMessage(copies);
  }

  function replay(seq: number, knobs: Knobs): void {
    const started = performance.now();
    const whatIf = whatIfOf(knobs, base ?? recordedSettings(null));
    const answer = lab.replay(whatIf);
    post({
      type: 'replayed',
      seq,
      // uPlot and its style are the page's own (report-view.ts); the page has its own header.
      html: renderReportWith(answer.results, { script: '', style: '' }, { header: false }),
      traces: answer.traces,
      command: answer.command,
      config: whatIf.config,
      milliseconds: Math.round(performance.now() - started),
    });
  }

  scope.addEventListener('message', (event: MessageEvent<ToEngine>) => {
    const message = event.data;
    switch (message.type) {
      case 'tuner':
        tuner = message.port;
        return;
      case 'open':
        open(message.id, message.source).catch((error: unknown) =>
          post({ type: 'failed', id: message.id, message: (error as Error).message }),
        );
        return;
      case 'tuning':
        lab.setTuning(message.index, message.result ?? undefined);
        return;
      case 'job':
        jobSeq = message.seq;
        runJob(message, lab.traces, post, () => jobSeq).catch((error: unknown) =>
          post({ type: 'job-failed', seq: message.seq, message: (error as Error).message }),
        );
        return;
      case 'state':
      case 'compare':
        inspect(message);
        return;
      case 'replay':
        try {
          replay(message.seq, message.knobs);
        } catch (error) {
          post({ type: 'replay-failed', seq: message.seq, message: (error as Error).message });
        }
    }
  });
}

/** The tuner (see the module comment). */
function tuner(): void {
  const traces: Trace[] = [];
  /** The latest request, and how many traces have been tuned under it. */
  let request: { seq: number; knobs: Knobs } | null = null;
  let done = 0;
  let running = false;
  const post = (message: FromTuner) => scope.postMessage(message);
  const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

  function search(trace: Trace, index: number, seq: number, knobs: Knobs): void {
    const memory = knobs.memoryGiB === null ? undefined : Math.round(knobs.memoryGiB * 2 ** 30);
    const result = tune(trace, {
      ...(memory !== undefined ? { memory } : {}),
      ...(memory !== undefined && knobs.fraction !== null ? { fraction: knobs.fraction } : {}),
      onProgress: (evaluated, config, run) =>
        post({
          type: 'tried',
          seq,
          index,
          trace: trace.name,
          evaluated,
          run: {
            allocator: config === '' ? 'defaults' : config,
            config,
            peakReservedBytes: run.peakReservedBytes,
            failures: run.failures,
            segmentCalls: run.segments.acquired + run.segments.grown,
          },
        }),
    });
    const { fraction, origin } = describeDevice(result);
    post({
      type: 'tuned',
      seq,
      index,
      trace: trace.name,
      result,
      advice: adviceOf(result),
      device: `${formatBytes(result.device.memory)} of memory, ${fraction}; ${origin}`,
      bestKnobs: knobsOf(recordedSettings(result.best.config)),
    });
  }

  async function run(): Promise<void> {
    if (running) return;
    running = true;
    try {
      while (request !== null && done < traces.length) {
        const current = request;
        search(traces[done]!, done, current.seq, current.knobs);
        done++;
        await pause(); // a newer request, if one came, starts over from here
      }
    } catch (error) {
      post({ type: 'tune-failed', seq: request?.seq ?? -1, message: (error as Error).message });
    } finally {
      running = false;
    }
  }

  scope.addEventListener('message', (event: MessageEvent<ToTuner>) => {
    const message = event.data;
    if (message.type === 'engine') {
      message.port.onmessage = (from: MessageEvent<TracesForTuner>) => {
        traces.push(...from.data.traces);
        void run();
      };
      return;
    }
    request = { seq: message.seq, knobs: message.knobs };
    done = 0;
    void run();
  });
}

// The page names each worker by its role.
if ((self as unknown as { name: string }).name === 'tuner') tuner();
else engine();
