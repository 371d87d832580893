/**
 * What `allot-lab record` says at the end, in one line: the snapshots each rank wrote, or why there
 * are none, from the status records every Python process of the job wrote (`STATUS/PID.jsonl`,
 * python/bootstrap/allot_lab_record_files.py).
 *
 * ```
 *  status records ─► per process: loaded, torch, no-cuda, recording, dump..., error, cuda-unused
 *                 ─► dumps? ─ yes ─► "N snapshots of R ranks in OUT (rank 0: ...); replay OUT reads them"
 *                            no  ─► the first reason that applies: the recorder failed, a process
 *                                   recorded but ended before a dump, torch without CUDA, CUDA never
 *                                   used, torch never imported, no Python process loaded the recorder
 * ```
 */
import { join } from 'node:path';
import { oomStepOf } from '../job/rank-name';
import { formatCount } from '../units';

/** One status record (one line of a process's status file). */
export interface StatusRecord {
  readonly event: string;
  readonly pid: number;
  readonly file?: string;
  readonly rank?: number;
  readonly step?: number;
  readonly reason?: 'step' | 'exit' | 'oom';
  readonly version?: string;
  readonly message?: string;
}

/** The records of a status file's text; lines that are not records are skipped. */
export function parseStatus(text: string): StatusRecord[] {
  const records: StatusRecord[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value = JSON.parse(line) as StatusRecord;
      if (typeof value?.event === 'string' && typeof value.pid === 'number') records.push(value);
    } catch {
      // A line cut short by a process killed while writing it.
    }
  }
  return records;
}

/** The step an OOM dump's error came in: `record` names a dump by the steps taken (`oomStepOf`). */
function oomStep(step: number): number {
  return oomStepOf({ step, oom: true, naming: 'allot-lab' })!;
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${formatCount(count)} ${count === 1 ? one : many}`;
}

/** Steps as a person reads them: `4, 8, 12`, or `4 to 400` when there are many. */
function stepList(steps: readonly number[]): string {
  const sorted = [...new Set(steps)].sort((a, b) => a - b);
  if (sorted.length <= 3) return sorted.map(formatCount).join(', ');
  return `${formatCount(sorted[0]!)} to ${formatCount(sorted.at(-1)!)}`;
}

interface RankDumps {
  readonly rank: number;
  readonly dumps: StatusRecord[];
}

/** What one rank wrote: `rank 0: 3 (steps 2, 4; exit at 5)`. */
function rankText({ rank, dumps }: RankDumps): string {
  const at = (reason: string) => dumps.filter((d) => d.reason === reason).map((d) => d.step ?? 0);
  const parts: string[] = [];
  const steps = at('step');
  if (steps.length > 0) parts.push(`${steps.length === 1 ? 'step' : 'steps'} ${stepList(steps)}`);
  const ooms = at('oom').map(oomStep);
  if (ooms.length > 0) parts.push(`out of memory in step ${stepList(ooms)}`);
  const exits = at('exit');
  if (exits.length > 0) parts.push(`exit at step ${formatCount(Math.max(...exits))}`);
  // A rank torchrun started again: each process counts its steps from 0 (its files say _restartK).
  const processes = new Set(dumps.map((dump) => dump.pid)).size;
  const from = processes > 1 ? `, from ${formatCount(processes)} processes` : '';
  return `rank ${rank}: ${formatCount(dumps.length)}${from} (${parts.join('; ')})`;
}

/** The snapshots written, by rank, in one line. */
function recorded(ranks: readonly RankDumps[], out: string): string {
  const total = ranks.reduce((sum, rank) => sum + rank.dumps.length, 0);
  let detail: string;
  if (ranks.length <= 8) {
    detail = ranks.map(rankText).join(', ');
  } else {
    const counts = ranks.map((rank) => rank.dumps.length);
    const least = Math.min(...counts);
    const most = Math.max(...counts);
    detail = `${least === most ? formatCount(least) : `${formatCount(least)} to ${formatCount(most)}`} each`;
  }
  const oom = ranks.flatMap((rank) => rank.dumps.filter((dump) => dump.reason === 'oom'));
  const died =
    oom.length === 0
      ? ''
      : `; rank ${oom[0]!.rank} ran out of memory in step ${formatCount(oomStep(oom[0]!.step ?? 0))}` +
        (oom.length > 1 ? ` (and ${plural(oom.length - 1, 'other snapshot')} at an OOM)` : '') +
        `: allot-lab oom ${join(out, oom[0]!.file ?? '')} explains it`;
  return (
    `${plural(total, 'snapshot')} of ${plural(ranks.length, 'rank')} in ${out} (${detail})${died}; ` +
    `allot-lab replay ${out} and allot-lab tune ${out} read them`
  );
}

/** Why nothing was written: the first reason that applies. */
function nothing(processes: ReadonlyMap<number, StatusRecord[]>): string {
  const having = (event: string) =>
    [...processes.values()].filter((records) => records.some((r) => r.event === event));
  const count = processes.size;
  const python = plural(count, 'Python process', 'Python processes');
  if (count === 0) {
    return (
      'no Python process loaded the recorder (the command ran no Python, or ran it with -I, -E ' +
      'or -S, which skip PYTHONPATH or sitecustomize)'
    );
  }
  const failed = having('error');
  if (failed.length > 0) {
    const message = failed[0]!.find((r) => r.event === 'error')?.message ?? '';
    return `the recorder stopped in ${plural(failed.length, 'process', 'processes')}: ${message}`;
  }
  const recording = having('recording');
  if (recording.length > 0) {
    return (
      `${plural(recording.length, 'process', 'processes')} recorded CUDA memory but ended before ` +
      'writing a snapshot (killed by SIGKILL, or left through os._exit, which skip the exit snapshot)'
    );
  }
  const noCuda = having('no-cuda');
  if (noCuda.length > 0) {
    const version = noCuda[0]!.find((r) => r.event === 'no-cuda')?.version ?? '?';
    return `torch ${version} has no CUDA (a CPU build), in ${plural(noCuda.length, 'process', 'processes')} of ${python}`;
  }
  const torch = having('torch');
  if (torch.length > 0) {
    const unseen = having('cuda-unseen').length;
    if (unseen > 0) {
      return `${plural(unseen, 'process', 'processes')} initialized CUDA without torch.cuda's lazy initialization, which the recorder waits for`;
    }
    return (
      `${plural(torch.length, 'process', 'processes')} of ${python} imported torch but none used ` +
      'CUDA (no GPU visible, or the program ran on the CPU)'
    );
  }
  return `${python} ran and none imported torch`;
}

/** The line record ends with (without `allot-lab record: ` and the newline). */
export function summaryLine(records: readonly StatusRecord[], out: string): string {
  const processes = new Map<number, StatusRecord[]>();
  for (const record of records) {
    const list = processes.get(record.pid) ?? [];
    list.push(record);
    processes.set(record.pid, list);
  }
  const byRank = new Map<number, StatusRecord[]>();
  for (const record of records) {
    if (record.event !== 'dump' || typeof record.rank !== 'number') continue;
    byRank.set(record.rank, [...(byRank.get(record.rank) ?? []), record]);
  }
  if (byRank.size === 0) return `nothing was recorded: ${nothing(processes)}`;
  const ranks = [...byRank.entries()]
    .sort(([a], [b]) => a - b)
    .map(([rank, dumps]) => ({ rank, dumps }));
  const failed = [...processes.values()].filter((list) => list.some((r) => r.event === 'error'));
  const failure =
    failed.length === 0
      ? ''
      : `; the recorder stopped in ${plural(failed.length, 'process', 'processes')}: ${
          failed[0]!.find((r) => r.event === 'error')?.message ?? ''
        }`;
  return `${recorded(ranks, out)}${failure}`;
}
