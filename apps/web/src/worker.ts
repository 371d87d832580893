/**
 * The page's workers: one script, two roles, told apart by the first message.
 *
 * - **engine**: reads each file as a stream (a `File`'s `stream()`, a fetch body for a file the
 *   local server names, or the sample it makes) through the lab's reader, with progress, keeps the
 *   traces in a `WhatIfLab` in the order the files were given (whichever is read first), forgets
 *   a file taken away, and answers each what-if with its replay's report, as data. It hands a copy
 *   of each trace, without stack frames, to the tuner.
 * - **tuner**: runs the lab's search of settings on each trace, telling the page of every setting
 *   as it is tried. A newer request (other device figures) ends an older one between traces.
 */
import {
  type AllocatorSettings,
  adviceOf,
  describeDevice,
  formatBytes,
  MAX_SIDECAR_BYTES,
  recordedCard,
  streamTraces,
  type Trace,
  tune,
  WhatIfLab,
  withoutFrames,
  withSidecar,
} from '@allot/lab/engine';
import { reportData } from '@allot/lab/report';
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
import { SAMPLE_NAME, sampleChunks } from './sample';

interface Scope {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void;
}
const scope = self as unknown as Scope;

/** Progress goes to the page at most this often (ms), and once at the end. */
const PROGRESS_EVERY = 100;

/** The bytes of `source`: its name, length when known, and chunks (a web stream is read as one). */
async function bytesOf(source: FileSource): Promise<{
  name: string;
  total: number | null;
  chunks: Parameters<typeof streamTraces>[0];
}> {
  if (source.kind === 'sample') return { name: SAMPLE_NAME, total: null, chunks: sampleChunks() };
  if (source.kind === 'file') {
    const { file } = source;
    return { name: file.name, total: file.size, chunks: file.stream() };
  }
  const response = await fetch(source.url);
  if (!response.ok || response.body === null) {
    throw new Error(`${source.name}: the server answered ${response.status}`);
  }
  const length = Number(response.headers.get('content-length'));
  return {
    name: source.name,
    total: Number.isFinite(length) && length > 0 ? length : null,
    chunks: response.body,
  };
}

/** The engine (see the module comment). */
function engine(): void {
  const lab = new WhatIfLab();
  let tuner: MessagePort | null = null;
  let base: AllocatorSettings | null = null;
  const post = (message: FromEngine) => scope.postMessage(message);
  const inspect = inspector(lab, () => base ?? recordedSettings(null), post);
  let jobSeq = 0;

  /** Files being read, in the order given; each joins the lab when those before it have. */
  const waiting: { id: number; read?: { name: string; traces: Trace[] } | null }[] = [];
  /** The traces of each file read, by its id. */
  const files = new Map<number, Trace[]>();

  async function read(id: number, source: FileSource): Promise<{ name: string; traces: Trace[] }> {
    const { name, total, chunks } = await bytesOf(source);
    let last = 0;
    const traces = await streamTraces(chunks, {
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
    if (source.kind === 'file' && source.sidecar !== undefined) {
      const text = source.sidecar.size <= MAX_SIDECAR_BYTES ? await source.sidecar.text() : '';
      return { name, traces: traces.map((trace) => withSidecar(trace, text)) };
    }
    return { name, traces };
  }

  /** The files read at the head of the queue join the lab, in the order they were given. */
  function land(): void {
    while (waiting[0]?.read !== undefined) {
      const { id, read } = waiting.shift()!;
      if (read) opened(id, read.name, read.traces);
    }
  }

  function opened(id: number, name: string, traces: Trace[]): void {
    lab.add(traces, name);
    files.set(id, traces);
    const opened: OpenedTrace[] = traces.map((trace) => {
      const conf = trace.meta.torchAllocConf;
      const recordedConfig = typeof conf === 'string' ? conf : null;
      return {
        name: trace.name,
        events: trace.length,
        recordedConfig,
        recordedKnobs: knobsOf(recordedSettings(recordedConfig)),
        deviceMemoryBytes: recordedCard(trace),
      };
    });
    base ??= recordedSettings(opened[0]?.recordedConfig ?? null);
    post({ type: 'opened', id, traces: opened });
    const copies: TracesForTuner = { type: 'traces', traces: traces.map(withoutFrames) };
    tuner?.postMessage(copies);
  }

  function open(id: number, source: FileSource): void {
    const slot: (typeof waiting)[number] = { id };
    waiting.push(slot);
    read(id, source).then(
      (done) => {
        slot.read = done;
        land();
      },
      (error: unknown) => {
        // Said at once; the files behind it need not wait for it.
        post({ type: 'failed', id, message: (error as Error).message });
        slot.read = null;
        land();
      },
    );
  }

  function remove(id: number): void {
    const traces = files.get(id);
    if (traces === undefined) return;
    files.delete(id);
    const first = lab.traces.indexOf(traces[0]!);
    lab.remove(traces);
    const count = traces.length;
    const forget: TracesForTuner = { type: 'remove', first, count };
    tuner?.postMessage(forget);
    post({ type: 'removed', id, first, count });
  }

  function replay(seq: number, knobs: Knobs): void {
    const started = performance.now();
    const whatIf = whatIfOf(knobs, base ?? recordedSettings(null));
    const answer = lab.replay(whatIf);
    post({
      type: 'replayed',
      seq,
      report: reportData(answer.results),
      command: answer.command,
      config: answer.config,
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
        open(message.id, message.source);
        return;
      case 'remove':
        remove(message.id);
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
        const data = from.data;
        if (data.type === 'traces') {
          traces.push(...data.traces);
          void run();
          return;
        }
        // A file taken away: the search stops; the page asks for a new one.
        traces.splice(data.first, data.count);
        request = null;
        done = 0;
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
