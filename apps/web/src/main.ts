/**
 * The page: takes files (the file input, drops, files the local server names in the URL, and the
 * sample the worker makes), hands them to the engine worker (files whose names give ranks make a
 * job, job-view.ts), shows their progress, and replays every trace under the controls' settings
 * whenever one changes, one replay at a time (a change during a replay waits for it, then the
 * latest is replayed). The tuner worker searches the settings beside it. A file taken away leaves
 * the others as they were, searched again.
 */
import workerSource from 'virtual:worker';
import {
  byId,
  clearSections,
  keepSettingNamesWhole,
  renderSections,
  traceBrief,
} from '@allot/lab/ui';
import { CompareView } from './compare-view';
import { ControlsView } from './controls-view';
import { FilesView } from './files-view';
import { JobView, ranksOf } from './job-view';
import { followJob, isLivePage } from './live-view';
import { PeaksView } from './peaks-view';
import type {
  FileSource,
  FromEngine,
  FromTuner,
  Knobs,
  OpenedTrace,
  ToEngine,
  ToTuner,
} from './protocol';
import { SAMPLE_NAME } from './sample';
import { pathOf, tracesWithSidecars } from './sidecars';
import { StacksView } from './stacks-view';
import { StateView } from './state-view';
import { TunerView } from './tuner-view';

const source = URL.createObjectURL(new Blob([workerSource], { type: 'text/javascript' }));
const engine = new Worker(source, { name: 'engine' });
const tuner = new Worker(source, { name: 'tuner' });
const toEngine = (message: ToEngine, transfer: Transferable[] = []) =>
  engine.postMessage(message, transfer);
const toTuner = (message: ToTuner, transfer: Transferable[] = []) =>
  tuner.postMessage(message, transfer);
{
  const channel = new MessageChannel();
  toEngine({ type: 'tuner', port: channel.port1 }, [channel.port1]);
  toTuner({ type: 'engine', port: channel.port2 }, [channel.port2]);
}

const files = new FilesView((id) => toEngine({ type: 'remove', id }));
const peaks = new PeaksView();
const traces: OpenedTrace[] = [];
let knobs: Knobs | null = null;
let nextFile = 0;
let replaySeq = 0;
let inFlight = 0;
let pending = false;
let tuneSeq = 0;
/** State requests: the one the worker has, and the latest waiting behind it. */
let stateSeq = 0;
let stateInFlight = false;
let stateWaiting: { trace: number; event: number } | null = null;

function askState(trace: number, event: number): void {
  if (knobs === null) return;
  if (stateInFlight) {
    stateWaiting = { trace, event };
    return;
  }
  stateInFlight = true;
  toEngine({ type: 'state', seq: ++stateSeq, trace, event, knobs });
}

function stateAnswered(): void {
  stateInFlight = false;
  const next = stateWaiting;
  stateWaiting = null;
  if (next !== null) askState(next.trace, next.event);
}
const stateView = new StateView(askState);
const stacksView = new StacksView();
const compare = new CompareView();
/** The seq of the comparison asked of the worker (the first two traces), 0 before. */
let compareSeq = 0;

function replay(): void {
  if (knobs === null || traces.length === 0) return;
  if (inFlight !== 0) {
    pending = true;
    return;
  }
  inFlight = ++replaySeq;
  peaks.busy();
  toEngine({ type: 'replay', seq: inFlight, knobs });
}

function search(): void {
  if (knobs === null) return;
  // Advice for another card is no advice: the report goes without until the new search ends.
  for (let index = 0; index < traces.length; index++)
    toEngine({ type: 'tuning', index, result: null });
  tunerView.start(++tuneSeq);
  toTuner({ type: 'tune', seq: tuneSeq, knobs });
}

function changed(next: Knobs): void {
  const device =
    knobs === null || next.memoryGiB !== knobs.memoryGiB || next.fraction !== knobs.fraction;
  knobs = next;
  replay();
  const shown = stateView.current();
  if (shown !== null) askState(shown.trace, shown.event);
  if (device) search();
}

const controls = new ControlsView(changed);
const tunerView = new TunerView((best) => {
  if (knobs === null) return;
  const next = { ...best, memoryGiB: knobs.memoryGiB, fraction: knobs.fraction };
  controls.set(next);
  changed(next);
});

function open(source: FileSource, size: number | null): number {
  const id = nextFile++;
  const name =
    source.kind === 'file' ? source.file.name : source.kind === 'url' ? source.name : SAMPLE_NAME;
  files.add(id, name, size);
  toEngine({ type: 'open', id, source });
  return id;
}

const job = new JobView((seq, ranks) => {
  if (knobs !== null) toEngine({ type: 'job', seq, ranks, knobs });
});

/** Files given at once: a job when their names (paths in a folder) give each a different rank. */
function openAll(given: Iterable<File>, folder: boolean): void {
  const chosen = tracesWithSidecars([...given], folder);
  const names = chosen.map(({ file }) => pathOf(file));
  const ranks = ranksOf(names);
  const ids = chosen.map((source) => open({ kind: 'file', ...source }, source.file.size));
  if (ranks !== null)
    job.start(
      names.map((name, i) => ({ name, id: ids[i]! })),
      ranks,
    );
}

/** The page as it opened, for when the last file is taken away. */
const emptyReport = [...byId('report').childNodes];

/** File `id`'s traces `[first, first + count)` are gone: every view forgets them. */
function removed(first: number, count: number, id: number): void {
  traces.splice(first, count);
  job.removed(id, first, count);
  stateView.reset(traces);
  compareSeq = 0;
  compare.hide();
  if (traces.length === 0) {
    stacksView.clear();
    for (const section of ['what-if', 'tuner']) byId(section).hidden = true;
    clearSections(byId('report'));
    byId('report').replaceChildren(...emptyReport);
    return;
  }
  if (traces.length >= 2) {
    compareSeq = ++stateSeq;
    toEngine({ type: 'compare', seq: compareSeq, before: 0, after: 1 });
  }
  search();
  replay();
}

engine.addEventListener('message', (event: MessageEvent<FromEngine>) => {
  const message = event.data;
  switch (message.type) {
    case 'progress':
      files.progress(message.id, message.bytesRead, message.totalBytes, message.events);
      return;
    case 'failed':
      files.failed(message.id, message.message);
      job.failedFile(message.id, message.message);
      return;
    case 'opened': {
      files.opened(message.id, message.traces);
      job.opened(message.id, traces.length, message.traces);
      const first = traces.length === 0;
      traces.push(...message.traces);
      byId('what-if').hidden = false;
      if (first && message.traces[0]) {
        const recorded = message.traces[0];
        controls.setRecorded(recorded.recordedKnobs, recorded.recordedConfig);
        knobs = controls.knobs();
        search();
      }
      stateView.add(message.traces);
      if (compareSeq === 0 && traces.length >= 2) {
        compareSeq = ++stateSeq;
        toEngine({ type: 'compare', seq: compareSeq, before: 0, after: 1 });
      }
      replay();
      return;
    }
    case 'replayed': {
      if (message.seq === inFlight) inFlight = 0;
      if (traces.length === 0) return; // every file was taken away meanwhile
      // One answer for every view: the report, and the figures beside it read from its data.
      const briefs = message.report.workloads.map((w) => traceBrief(w, message.config));
      peaks.show(briefs, message.command, message.milliseconds);
      compare.showPeaks(briefs);
      job.show(briefs);
      // The page states the command itself, beside the what-if.
      renderSections(byId('report'), message.report, { header: false });
      document.body.dataset.replayed = String(message.seq);
      if (pending) {
        pending = false;
        replay();
      }
      return;
    }
    case 'state': {
      stateAnswered();
      stateView.show(message.trace, message.state);
      const shown = stateView.current();
      if (shown?.trace === message.trace && shown.event === message.state.event)
        stacksView.show(message.state.event, message.stacks);
      return;
    }
    case 'removed':
      removed(message.first, message.count, message.id);
      return;
    case 'compared':
      compare.showGrown(message.by, message.groups);
      return;
    case 'job-progress':
      job.progress(message.seq, message.done, message.total);
      return;
    case 'job-advised':
      job.advised(message);
      return;
    case 'job-failed':
      job.failed(message.seq, message.message);
      return;
    case 'inspect-failed':
      if (message.seq === compareSeq) {
        compare.failed(message.message);
        return;
      }
      stateAnswered();
      stateView.failed(message.message);
      return;
    case 'replay-failed':
      if (message.seq === inFlight) inFlight = 0;
      peaks.failed(message.message);
      if (pending) {
        pending = false;
        replay();
      }
  }
});

// A worker that stops (out of memory, say) leaves the page: say so where its answers would be.
engine.addEventListener('error', (event) => {
  inFlight = 0;
  peaks.failed(
    `the worker stopped (${event.message || 'out of memory?'}); reload the page to start again`,
  );
});
tuner.addEventListener('error', (event) => {
  tunerView.failed(`the worker stopped (${event.message || 'out of memory?'})`);
});

tuner.addEventListener('message', (event: MessageEvent<FromTuner>) => {
  const message = event.data;
  switch (message.type) {
    case 'tried':
      tunerView.tried(message.seq, message.index, message.trace, message.run);
      return;
    case 'tuned':
      tunerView.tuned(
        message.seq,
        message.index,
        message.trace,
        message.advice,
        message.device,
        message.bestKnobs,
      );
      if (message.seq === tuneSeq) {
        // The report's diagnosis gives the advice too, from the next replay on.
        toEngine({ type: 'tuning', index: message.index, result: message.result });
        replay();
      }
      return;
    case 'tune-failed':
      tunerView.failed(message.message);
  }
});

// Files: the input, drops anywhere on the page, and those the local server names (?file=...).
const input = byId<HTMLInputElement>('file-input');
input.addEventListener('change', () => {
  openAll(input.files ?? [], false);
  input.value = '';
});
const folderInput = byId<HTMLInputElement>('folder-input');
folderInput.addEventListener('change', () => {
  openAll(folderInput.files ?? [], true);
  folderInput.value = '';
});
const drop = byId('drop');
document.addEventListener('dragover', (event) => {
  event.preventDefault();
  drop.classList.add('over');
});
document.addEventListener('dragleave', (event) => {
  if (event.relatedTarget === null) drop.classList.remove('over');
});
document.addEventListener('drop', (event) => {
  event.preventDefault();
  drop.classList.remove('over');
  openAll(event.dataTransfer?.files ?? [], false);
});
for (const path of new URLSearchParams(location.search).getAll('file')) {
  const url = new URL(path, location.href);
  if (url.origin !== location.origin) continue; // only files from where the page came from
  open(
    { kind: 'url', url: url.href, name: decodeURIComponent(url.pathname.split('/').pop() ?? path) },
    null,
  );
}
byId('sample').addEventListener('click', () => open({ kind: 'sample' }, null));
// Setting names in the panel break only after , : or = (the report's are kept so by renderSections).
keepSettingNamesWhole(byId('panel'));
// Served by `allot-lab serve --watch DIR`: the job it follows, live.
if (isLivePage()) followJob(byId('watch'));
document.body.dataset.ready = 'true';
