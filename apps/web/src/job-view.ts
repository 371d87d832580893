/**
 * A job: files whose names give each a different rank (a folder of rank snapshots, or several
 * files dropped at once, named as torchtitan or Megatron name them). One row per rank
 * (`[data-testid="job-rank"]`, its rank in `data-rank`): its file, the predicted peak reserved under
 * the settings it recorded (`data-bytes`, as `allot-lab replay DIR` predicts it), PyTorch's recorded
 * one and the what-if's; a rank that could not be read says why (`data-failed`). Then the worst
 * rank (`job-worst`, `data-rank`) and the spread between ranks, under the settings each recorded, as
 * `replay DIR` gives them. Its button asks the engine for one setting for every rank read, shown as a
 * `PYTORCH_CUDA_ALLOC_CONF=` line (`job-advice`, the setting in `data-config`), once every file is
 * read or has failed. Ranks recorded with different settings are said to be (`job-mixed`), in the
 * words of `tune DIR`, and tuned as one only when asked again, as `--force` does.
 */
import {
  type FailedRankNote,
  failedRanksText,
  failedRankText,
  mixedSettingsText,
  nameOf,
  settingGroups,
} from '@allot/lab/engine';
import {
  byId,
  formatBytes,
  h,
  type RankRow,
  rankRows,
  settingName,
  type TraceBrief,
} from '@allot/lab/ui';
import type { FromEngine, OpenedTrace } from './protocol';
import { copy, line } from './tuner-view';

/** A file of the job: its rank, and the trace the page replays for it once read. */
interface RankEntry {
  readonly rank: number;
  readonly file: string;
  /** The file's id on the page. */
  readonly id: number;
  /** The index of its trace (the one with the most events), once read. */
  trace: number | null;
  /** The settings the trace recorded (null: none stated), once read. */
  recordedConf: string | null;
  /** Why the file could not be read, if it could not. */
  failed: string | null;
}

type Advised = Extract<FromEngine, { type: 'job-advised' }>;

/** The ranks `names` give, or null unless every name gives one and no two the same. */
export function ranksOf(names: readonly string[]): number[] | null {
  if (names.length < 2) return null;
  const ranks = names.map((name) => nameOf(name).rank);
  if (ranks.some((rank) => rank === null)) return null;
  return new Set(ranks).size === ranks.length ? (ranks as number[]) : null;
}

const ADVISE = 'One setting for every rank';
const FORCE = 'Tune them as one anyway';

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export class JobView {
  private readonly section = byId('job');
  private readonly table = byId('job-ranks');
  private readonly summary = byId('job-summary');
  private readonly button = byId<HTMLButtonElement>('job-advise');
  private readonly answer = byId('job-answer');
  private ranks: RankEntry[] = [];
  private seq = 0;
  /** Whether the engine is replaying the ranks for the advice. */
  private running = false;
  private briefs: readonly TraceBrief[] = [];

  /** `ask(seq, ranks)` sends the request to the engine. */
  constructor(ask: (seq: number, ranks: { rank: number; trace: number }[]) => void) {
    this.button.addEventListener('click', () => {
      if (!this.settled()) return;
      const ranks = this.ranks.flatMap(({ rank, trace }) =>
        trace === null ? [] : [{ rank, trace }],
      );
      this.button.disabled = true;
      this.running = true;
      this.answer.replaceChildren(h('p', { class: 'small muted' }, 'replaying every rank…'));
      ask(++this.seq, ranks);
    });
  }

  /** A new job: files `files` (name and page id) with their ranks; the former job is forgotten. */
  start(files: readonly { name: string; id: number }[], ranks: readonly number[]): void {
    this.ranks = files
      .map(({ name, id }, i) => ({
        rank: ranks[i]!,
        file: name,
        id,
        trace: null,
        recordedConf: null,
        failed: null,
      }))
      .sort((a, b) => a.rank - b.rank);
    this.seq++;
    this.running = false;
    this.briefs = [];
    this.section.hidden = false;
    this.button.disabled = true;
    this.button.textContent = ADVISE;
    this.answer.replaceChildren();
    this.table.replaceChildren();
    this.summary.textContent = `${this.ranks.length} ranks: reading their files…`;
  }

  /** File `id` was read: its traces begin at index `first`. */
  opened(id: number, first: number, traces: readonly OpenedTrace[]): void {
    const entry = this.ranks.find((rank) => rank.id === id);
    if (entry === undefined || traces.length === 0) return;
    let longest = 0;
    for (let i = 1; i < traces.length; i++)
      if (traces[i]!.events > traces[longest]!.events) longest = i;
    entry.trace = first + longest;
    entry.recordedConf = traces[longest]!.recordedConfig;
    this.draw();
  }

  /** File `id` could not be read: its rank is named with the error, and the others go on. */
  failedFile(id: number, message: string): void {
    const entry = this.ranks.find((rank) => rank.id === id);
    if (entry === undefined) return;
    entry.failed = message;
    this.draw();
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
    this.briefs = traces;
    this.draw();
  }

  /** Whether every file is read or has failed, and one at least was read. */
  private settled(): boolean {
    return (
      this.ranks.every((rank) => rank.trace !== null || rank.failed !== null) &&
      this.ranks.some((rank) => rank.trace !== null)
    );
  }

  private failures(): FailedRankNote[] {
    return this.ranks.flatMap(({ rank, failed }) =>
      failed === null ? [] : [{ rank, message: failed }],
    );
  }

  private draw(): void {
    if (this.ranks.length === 0) return;
    const briefOf = (rank: RankEntry) =>
      rank.trace === null ? undefined : this.briefs[rank.trace];
    // As `replay DIR` predicts each rank: under the settings it recorded.
    const ownOf = (brief: TraceBrief) => (brief.recorded ?? brief.whatIf).peakReservedBytes;
    const shown = this.ranks.filter((rank) => briefOf(rank) !== undefined);
    let worst: RankEntry | undefined;
    let least: RankEntry | undefined;
    for (const rank of shown) {
      const peak = ownOf(briefOf(rank)!);
      if (worst === undefined || peak > ownOf(briefOf(worst)!)) worst = rank;
      if (least === undefined || peak < ownOf(briefOf(least)!)) least = rank;
    }
    const { header, rows } = rankRows(
      ['rank', 'file', 'predicted', 'recorded', 'what-if'],
      this.ranks.map((rank): RankRow => {
        const row = {
          name: String(rank.rank),
          file: rank.file,
          attributes: {
            'data-testid': 'job-rank',
            'data-rank': String(rank.rank),
            ...(rank === worst ? { class: 'worst' } : {}),
          },
        };
        if (rank.failed !== null) {
          const note = `could not be read: ${rank.failed}`;
          const attributes = { ...row.attributes, class: 'failed', 'data-failed': 'true' };
          return { ...row, attributes, cells: { note, class: 'job-error' } };
        }
        const brief = briefOf(rank);
        if (brief === undefined) return { ...row, cells: { note: 'reading…', class: 'muted' } };
        const recorded = brief.recordedPeakReservedBytes;
        const own = ownOf(brief);
        const setting = `under ${settingName(brief.recorded?.config ?? brief.whatIf.config)}, as recorded`;
        const whatIf = brief.whatIf.peakReservedBytes;
        return {
          ...row,
          cells: [
            { text: formatBytes(own), attributes: { 'data-bytes': String(own), title: setting } },
            recorded === null ? '–' : formatBytes(recorded),
            { text: formatBytes(whatIf), attributes: { 'data-what-if': String(whatIf) } },
          ],
        };
      }),
    );
    this.table.replaceChildren(header, ...rows);
    const settled = this.settled();
    const mixed = mixedSettingsText(
      settingGroups(
        this.ranks.flatMap(({ rank, trace, recordedConf }) =>
          trace === null ? [] : [{ rank, recordedConf }],
        ),
      ),
    );
    this.button.textContent = mixed === null ? ADVISE : FORCE;
    this.button.disabled = this.running || !settled;
    const notes = [
      ...(mixed === null
        ? []
        : [
            h(
              'p',
              { class: 'warning', 'data-testid': 'job-mixed' },
              `${capitalized(mixed)}. “${FORCE}” tunes them as one, as allot-lab tune DIR --force does.`,
            ),
          ]),
    ];
    const read = this.ranks.filter((rank) => rank.trace !== null);
    // The worst and the spread once every rank read is replayed.
    if (worst === undefined || least === undefined || !settled || shown.length < read.length) {
      const failed = this.failures().length;
      this.summary.replaceChildren(
        `${read.length} of ${this.ranks.length} ranks read${failed > 0 ? `, ${failed} failed` : ''}…`,
        ...notes,
      );
      return;
    }
    const spread = ownOf(briefOf(worst)!) - ownOf(briefOf(least)!);
    const peak = ownOf(briefOf(worst)!);
    const share = peak > 0 ? ((spread / peak) * 100).toFixed(1) : '0.0';
    const failed = failedRanksText(this.failures(), shown.length);
    this.summary.replaceChildren(
      'Worst: ',
      h('b', { 'data-testid': 'job-worst', 'data-rank': String(worst.rank) }, `rank ${worst.rank}`),
      ` (${formatBytes(peak)} under the settings it recorded); the ranks differ by up to `,
      h('span', { 'data-testid': 'job-spread', 'data-bytes': String(spread) }, formatBytes(spread)),
      ` (${share} % of the worst).`,
      ...(failed === null
        ? []
        : [
            h(
              'p',
              { class: 'failed', 'data-testid': 'job-failed-ranks' },
              `${capitalized(failed)}.`,
            ),
          ]),
      ...notes,
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
    this.running = false;
    this.button.disabled = false;
    const text = line(message.config);
    const code = h('code', { 'data-testid': 'job-advice', 'data-config': message.config }, text);
    const copyButton = h('button', { type: 'button' }, 'Copy');
    copyButton.addEventListener('click', () => void copy(text, copyButton, code));
    const saving =
      message.config === ''
        ? `PyTorch's defaults are already the best of ${message.candidates} settings for every rank.`
        : `${settingName(message.config)}: the worst rank, ${message.worst.rank}, is predicted at ${formatBytes(message.worst.peakReservedBytes)} instead of ${formatBytes(message.defaultsWorst.peakReservedBytes)} (rank ${message.defaultsWorst.rank}) with the defaults: ${formatBytes(message.savingBytes)} saved.`;
    // The files that could not be read, and the ranks the engine could not replay on this card.
    const failed = [...this.failures(), ...message.failed].sort((a, b) => a.rank - b.rank);
    const left = failedRanksText(failed, message.ranks);
    this.answer.replaceChildren(
      h('p', { class: 'advice' }, code, ' ', copyButton),
      h('p', { class: 'small' }, saving),
      ...(left === null
        ? []
        : [
            h(
              'p',
              { class: 'small failed', 'data-testid': 'job-advice-failed' },
              `Over the ranks read: ${left}. `,
              ...failed.map((f) => h('span', { class: 'job-error' }, `${failedRankText(f)}. `)),
            ),
          ]),
    );
  }

  failed(seq: number, message: string): void {
    if (seq !== this.seq) return;
    this.running = false;
    this.button.disabled = false;
    this.answer.replaceChildren(h('p', { class: 'error' }, message));
  }
}
