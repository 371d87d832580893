/**
 * A job: files whose names give each a different rank (a folder of rank snapshots, or several
 * files dropped at once, named as torchtitan or Megatron name them). One row per rank
 * (`[data-testid="job-rank"]`, its rank in `data-rank`): its file, the predicted peak reserved under
 * the what-if's settings and PyTorch's recorded one; the worst rank (`job-worst`, `data-rank`) and
 * the spread between ranks. Its button asks the engine for one setting for every rank, shown as a
 * `PYTORCH_CUDA_ALLOC_CONF=` line (`job-advice`, the setting in `data-config`).
 */
import { nameOf } from '@allot/lab/engine';
import { byId, formatBytes, h, settingName, type TraceBrief } from '@allot/lab/ui';
import type { FromEngine } from './protocol';
import { copy, line } from './tuner-view';

/** A file of the job: its rank, and the trace the page replays for it once read. */
interface RankEntry {
  readonly rank: number;
  readonly file: string;
  /** The file's id on the page. */
  readonly id: number;
  /** The index of its trace (the one with the most events), once read. */
  trace: number | null;
}

type Advised = Extract<FromEngine, { type: 'job-advised' }>;

/** The ranks `names` give, or null unless every name gives one and no two the same. */
export function ranksOf(names: readonly string[]): number[] | null {
  if (names.length < 2) return null;
  const ranks = names.map((name) => nameOf(name).rank);
  if (ranks.some((rank) => rank === null)) return null;
  return new Set(ranks).size === ranks.length ? (ranks as number[]) : null;
}

export class JobView {
  private readonly section = byId('job');
  private readonly table = byId('job-ranks');
  private readonly summary = byId('job-summary');
  private readonly button = byId<HTMLButtonElement>('job-advise');
  private readonly answer = byId('job-answer');
  private ranks: RankEntry[] = [];
  private seq = 0;

  /** `ask(seq, ranks)` sends the request to the engine. */
  constructor(ask: (seq: number, ranks: { rank: number; trace: number }[]) => void) {
    this.button.addEventListener('click', () => {
      const ranks = this.ranks.flatMap(({ rank, trace }) =>
        trace === null ? [] : [{ rank, trace }],
      );
      if (ranks.length !== this.ranks.length) return;
      this.button.disabled = true;
      this.answer.replaceChildren(h('p', { class: 'small muted' }, 'replaying every rank…'));
      ask(++this.seq, ranks);
    });
  }

  /** A new job: files `files` (name and page id) with their ranks; the former job is forgotten. */
  start(files: readonly { name: string; id: number }[], ranks: readonly number[]): void {
    this.ranks = files
      .map(({ name, id }, i) => ({ rank: ranks[i]!, file: name, id, trace: null }))
      .sort((a, b) => a.rank - b.rank);
    this.seq++;
    this.section.hidden = false;
    this.button.disabled = true;
    this.answer.replaceChildren();
    this.table.replaceChildren();
    this.summary.textContent = `${this.ranks.length} ranks: reading their files…`;
  }

  /** File `id` was read: its traces begin at index `first`; `events` each. */
  opened(id: number, first: number, events: readonly number[]): void {
    const entry = this.ranks.find((rank) => rank.id === id);
    if (entry === undefined || events.length === 0) return;
    let longest = 0;
    for (let i = 1; i < events.length; i++) if (events[i]! > events[longest]!) longest = i;
    entry.trace = first + longest;
    this.button.disabled = this.ranks.some((rank) => rank.trace === null);
  }

  /**
   * File `id`, whose traces were `[first, first + count)`, was taken away: its rank leaves the job
   * (the job with it, when fewer than two ranks are left), and the traces after it move down.
   */
  removed(id: number, first: number, count: number): void {
    this.ranks = this.ranks.filter((rank) => rank.id !== id);
    for (const rank of this.ranks) {
      if (rank.trace !== null && rank.trace >= first + count) rank.trace -= count;
    }
    if (this.ranks.length >= 2) {
      this.button.disabled = this.ranks.some((rank) => rank.trace === null);
      return;
    }
    this.ranks = [];
    this.seq++;
    this.section.hidden = true;
  }

  /** A replay's briefs: each rank's peaks, the worst rank and the spread. */
  show(traces: readonly TraceBrief[]): void {
    const read = this.ranks.filter((rank) => rank.trace !== null && traces[rank.trace]);
    if (read.length === 0) return;
    const peakOf = (rank: RankEntry) => traces[rank.trace!]!.whatIf.peakReservedBytes;
    let worst = read[0]!;
    let least = read[0]!;
    for (const rank of read) {
      if (peakOf(rank) > peakOf(worst)) worst = rank;
      if (peakOf(rank) < peakOf(least)) least = rank;
    }
    const header = h(
      'tr',
      {},
      ...['rank', 'file', 'predicted peak', 'recorded'].map((title) =>
        h('th', { scope: 'col' }, title),
      ),
    );
    const rows = read.map((rank) => {
      const recorded = traces[rank.trace!]!.recordedPeakReservedBytes;
      return h(
        'tr',
        {
          'data-testid': 'job-rank',
          'data-rank': String(rank.rank),
          ...(rank === worst ? { class: 'worst' } : {}),
        },
        h('th', { scope: 'row' }, String(rank.rank)),
        h('td', { class: 'job-file' }, rank.file),
        h('td', { 'data-bytes': String(peakOf(rank)) }, formatBytes(peakOf(rank))),
        h('td', {}, recorded === null ? '–' : formatBytes(recorded)),
      );
    });
    this.table.replaceChildren(header, ...rows);
    if (read.length < this.ranks.length) {
      this.summary.textContent = `${read.length} of ${this.ranks.length} ranks read…`;
      return;
    }
    const spread = peakOf(worst) - peakOf(least);
    const share = peakOf(worst) > 0 ? ((spread / peakOf(worst)) * 100).toFixed(1) : '0.0';
    this.summary.replaceChildren(
      'Worst: ',
      h('b', { 'data-testid': 'job-worst', 'data-rank': String(worst.rank) }, `rank ${worst.rank}`),
      ` (${formatBytes(peakOf(worst))}); the ranks differ by up to `,
      h('span', { 'data-testid': 'job-spread', 'data-bytes': String(spread) }, formatBytes(spread)),
      ` (${share} % of the worst).`,
    );
  }

  progress(seq: number, done: number, total: number): void {
    if (seq !== this.seq) return;
    this.answer.replaceChildren(
      h('p', { class: 'small muted' }, `replaying every rank: ${done} of ${total} replays`),
    );
  }

  advised(message: Advised): void {
    if (message.seq !== this.seq) return;
    this.button.disabled = false;
    const text = line(message.config);
    const code = h('code', { 'data-testid': 'job-advice', 'data-config': message.config }, text);
    const copyButton = h('button', { type: 'button' }, 'Copy');
    copyButton.addEventListener('click', () => void copy(text, copyButton, code));
    const saving =
      message.config === ''
        ? `PyTorch's defaults are already the best of ${message.candidates} settings for every rank.`
        : `${settingName(message.config)}: the worst rank, ${message.worst.rank}, is predicted at ${formatBytes(message.worst.peakReservedBytes)} instead of ${formatBytes(message.defaultsWorst.peakReservedBytes)} (rank ${message.defaultsWorst.rank}) with the defaults: ${formatBytes(message.savingBytes)} saved.`;
    this.answer.replaceChildren(
      h('p', { class: 'advice' }, code, ' ', copyButton),
      h('p', { class: 'small' }, saving),
    );
  }

  failed(seq: number, message: string): void {
    if (seq !== this.seq) return;
    this.button.disabled = false;
    this.answer.replaceChildren(h('p', { class: 'error' }, message));
  }
}
