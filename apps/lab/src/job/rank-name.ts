/**
 * A rank's number, step and out-of-memory mark from the name a framework gave its snapshot
 * (layout.ts finds the files; this reads their names, in Node.js or in a browser), and a list of
 * ranks as the output writes it.
 *
 * ```
 *  allot-lab    rankR_stepN.pickle, rankR_stepN_exit.pickle, rankR_stepN_oom.pickle (`record`;
 *               rankR_restartK_stepN... once torchrun has started the workers again K times)
 *  torchtitan   iteration_N[_exit]/rankR_memory_snapshot.pickle, step_N/RRRRRR_step_N.pickle
 *  Megatron     snapshot_R.pickle, NAME_rank-R.pickle, NAME_oom_rank-R.pickle (an OOM snapshot,
 *               Megatron-Bridge and NeMo), oom_rank-R_NAME.pickle (Megatron-LM's OOM snapshot)
 *  verl         stepN/TAG_rankR_pidP.pickle (stepsA-B/ for a window of steps, N = B),
 *               oom_TIME/torch_memory_oom_rankR_pidP.pickle (its OOM observer's)
 *  lmms-engine  snapshot_REASON_rankR.pickle, snapshot_oom_observer_rankR_pidP_TIME.pickle
 *  otherwise    rankR anywhere in the name; a step from `step_N` or `stepN` in the name
 * ```
 */

/** How the rank numbers were found. */
export type RankNaming =
  | 'allot-lab'
  | 'torchtitan'
  | 'megatron'
  | 'verl'
  | 'lmms-engine'
  | 'rank in the name'
  | 'sorted order';

const TRACE_NAME = /\.(pickle|pkl)(\.gz)?$|(trace|snapshot)[^/]*\.json(\.gz)?$/i;

/** Whether a file's name is one of a trace (a snapshot or a profiler trace, gzipped or not). */
export function isTraceName(name: string): boolean {
  return TRACE_NAME.test(name);
}

/** What a file's path says of its rank. */
export interface Named {
  readonly rank: number | null;
  readonly step: number | null;
  readonly oom: boolean;
  /** A dump at the process's exit (`record`'s `_exit`): the last a rank writes of its step. */
  readonly exit?: boolean;
  /** How many times the rank's process was started again before this one (`record`'s `_restartK`). */
  readonly restart?: number;
  readonly naming: RankNaming | null;
}

/** Step and OOM mark from a path's folders: the nearest folder naming a step wins. */
function folderStep(folders: readonly string[]): { step: number | null; oom: boolean } {
  let step: number | null = null;
  let oom = false;
  for (const folder of folders) {
    const match =
      /^(?:iteration|step)_?(\d+)(_exit)?$/.exec(folder) ?? /^steps\d+-(\d+)$/.exec(folder);
    if (match) {
      step = Number(match[1]);
      oom = match[2] !== undefined;
    } else if (/^oom[_-]/i.test(folder)) {
      oom = true;
    }
  }
  return { step, oom };
}

/** Whether a name marks an out-of-memory snapshot: `oom` as a word of it (`_oom_`, `oom_observer`). */
function oomInName(name: string): boolean {
  return /(?:^|[_.-])oom(?:[_.-]|$)/i.test(name);
}

/** Rank, step and OOM mark from a file's path (its name, and the nearest folder naming a step). */
export function nameOf(path: string): Named {
  const parts = path.split(/[\\/]/);
  const name = parts.at(-1) ?? '';
  const folders = parts.slice(0, -1);
  const fromFolders = folderStep(folders);
  const step = fromFolders.step ?? stepInName(name);
  let oom = fromFolders.oom;
  let match =
    /^rank(\d+)(?:_restart(\d+))?_step(\d+)(?:_(exit|oom))?\.(?:pickle|pkl)(?:\.gz)?$/.exec(name);
  if (match) {
    return {
      rank: Number(match[1]),
      step: Number(match[3]),
      oom: match[4] === 'oom',
      exit: match[4] === 'exit',
      restart: Number(match[2] ?? 0),
      naming: 'allot-lab',
    };
  }
  match = /^(\d+)_step_(\d+)\./.exec(name);
  if (match) return { rank: Number(match[1]), step: Number(match[2]), oom, naming: 'torchtitan' };
  match = /^rank(\d+)_memory_snapshot\./.exec(name);
  if (match) return { rank: Number(match[1]), step, oom, naming: 'torchtitan' };
  match = /_oom_rank-(\d+)\./.exec(name) ?? /^oom_rank-(\d+)_/.exec(name);
  if (match) return { rank: Number(match[1]), step, oom: true, naming: 'megatron' };
  match = /_rank-(\d+)\./.exec(name) ?? /^snapshot_(\d+)\./.exec(name);
  if (match) return { rank: Number(match[1]), step, oom, naming: 'megatron' };
  oom ||= oomInName(name);
  match = /^snapshot_.+_rank(\d+)(?:_pid\d+_\d+)?\.(?:pickle|pkl)/.exec(name);
  if (match) return { rank: Number(match[1]), step, oom, naming: 'lmms-engine' };
  match = /_rank(\d+)_pid\d+\.(?:pickle|pkl)/.exec(name);
  if (match) return { rank: Number(match[1]), step, oom, naming: 'verl' };
  match = /rank[-_]?(\d+)/i.exec(name);
  if (match) return { rank: Number(match[1]), step, oom, naming: 'rank in the name' };
  return { rank: null, step, oom, naming: null };
}

/**
 * The order in which a rank wrote two of its dumps, from their names: by the process's start (a
 * rank started again counts its steps from 0), then by step (those whose names state none last),
 * then within a step the dump at the step, the OOM dump, and the dump at exit. Negative when `a`
 * came first.
 */
export function dumpOrder(
  a: Pick<Named, 'step' | 'oom' | 'exit' | 'restart'>,
  b: Pick<Named, 'step' | 'oom' | 'exit' | 'restart'>,
): number {
  const kind = (named: Pick<Named, 'oom' | 'exit'>) => (named.exit ? 2 : named.oom ? 1 : 0);
  return (
    (a.restart ?? 0) - (b.restart ?? 0) ||
    (a.step ?? Number.POSITIVE_INFINITY) - (b.step ?? Number.POSITIVE_INFINITY) ||
    kind(a) - kind(b)
  );
}

/**
 * The step a rank ran out of memory in, from its OOM dump's name, or null when the name is no OOM
 * dump's or states no step. `record` names every dump by the steps taken (S), so its OOM dump's
 * error came in step S + 1; torchtitan and the others name the step under way.
 */
export function oomStepOf(named: Pick<Named, 'step' | 'oom' | 'naming'>): number | null {
  if (!named.oom || named.step === null) return null;
  return named.naming === 'allot-lab' ? named.step + 1 : named.step;
}

/** Of one rank's dumps of one step, which is read: its OOM one (it died), its exit one, the step's. */
function weight(file: Named): number {
  return file.oom ? 2 : file.exit ? 1 : 0;
}

/**
 * Each rank's newest dump of `record`'s names. `record` counts steps per process, so a rank that
 * died, or lagged, or was started again, ends at another step than the others: each rank's latest
 * restart, its highest step, and of one step its out-of-memory dump, then its exit one. A note says
 * which step each rank was read at (pushed to `notes` when the steps differ or a rank died). The
 * step is the ranks' one, or null when they differ. Browser-safe: the web app chooses a folder's
 * files with it too.
 */
export function newestOfEachRank<T extends Named>(
  all: readonly T[],
  notes: string[],
): { chosen: T[]; step: number | null } {
  const newest = new Map<number, T>();
  for (const file of all) {
    const held = newest.get(file.rank!);
    // A rank started again counts its steps from 0: its latest process's dumps are the newest.
    const newer =
      held === undefined ? 1 : (file.restart ?? 0) - (held.restart ?? 0) || file.step! - held.step!;
    if (newer > 0 || (newer === 0 && weight(file) > weight(held!))) {
      newest.set(file.rank!, file);
    }
  }
  const chosen = [...newest.values()];
  const steps = new Set(all.map((file) => file.step));
  if (steps.size > 1 || chosen.some((file) => file.oom)) {
    // Newest step first; at one step, the ranks read as usual, then those that died.
    const groups = new Map<string, T[]>();
    for (const file of [...chosen].sort(
      (x, y) => (y.restart ?? 0) - (x.restart ?? 0) || y.step! - x.step! || x.rank! - y.rank!,
    )) {
      const key = `${file.step} ${file.restart ?? 0}${file.oom ? ' oom' : ''}`;
      groups.set(key, [...(groups.get(key) ?? []), file]);
    }
    const said = [...groups.values()].map((ranks) => {
      const one = ranks.length === 1;
      const died = !ranks[0]!.oom
        ? ''
        : one
          ? ', its out-of-memory snapshot: it died'
          : ', their out-of-memory snapshots: they died';
      const again = ranks[0]!.restart
        ? ` of ${one ? 'its' : 'their'} restart ${ranks[0]!.restart}`
        : '';
      return `rank${one ? '' : 's'} ${rankList(ranks.map((file) => file.rank!))} at step ${ranks[0]!.step}${again}${died}`;
    });
    notes.push(
      `each rank's newest snapshot, its steps counted by its own process (--step N reads step N of every rank): ${said.join('; ')}`,
    );
  }
  const first = chosen[0]?.step ?? null;
  return { chosen, step: chosen.every((file) => file.step === first) ? first : null };
}

/** A step the name states (`_step_N`, `stepN`), or null. */
function stepInName(name: string): number | null {
  const match = /(?:^|_)step_?(\d+)(?=[_.])/.exec(name);
  return match ? Number(match[1]) : null;
}

/** `0–3, 7, 9–10`: a list of ranks, runs shortened. */
export function rankList(ranks: readonly number[]): string {
  const sorted = [...ranks].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(j === i ? `${sorted[i]}` : `${sorted[i]}–${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(', ');
}
