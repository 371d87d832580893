/**
 * A rank's number, step and out-of-memory mark from the name a framework gave its snapshot
 * (layout.ts finds the files; this reads their names, in Node.js or in a browser).
 *
 * ```
 *  allot-lab    rankR_stepN.pickle, rankR_stepN_exit.pickle, rankR_stepN_oom.pickle (`record`)
 *  torchtitan   iteration_N[_exit]/rankR_memory_snapshot.pickle, step_N/RRRRRR_step_N.pickle
 *  Megatron     snapshot_R.pickle, NAME_rank-R.pickle, NAME_oom_rank-R.pickle (an OOM snapshot)
 *  otherwise    rankR anywhere in the name
 * ```
 */

/** How the rank numbers were found. */
export type RankNaming =
  | 'allot-lab'
  | 'torchtitan'
  | 'megatron'
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
  readonly naming: RankNaming | null;
}

/** Rank, step and OOM mark from a file's path (its name, and the nearest folder naming a step). */
export function nameOf(path: string): Named {
  const parts = path.split(/[\\/]/);
  const name = parts.at(-1) ?? '';
  const folders = parts.slice(0, -1);
  let step: number | null = null;
  let oom = false;
  for (const folder of folders) {
    const match = /^(?:iteration|step)_(\d+)(_exit)?$/.exec(folder);
    if (match) {
      step = Number(match[1]);
      oom = match[2] !== undefined;
    }
  }
  let match = /^rank(\d+)_step(\d+)(?:_(exit|oom))?\.(?:pickle|pkl)(?:\.gz)?$/.exec(name);
  if (match) {
    return {
      rank: Number(match[1]),
      step: Number(match[2]),
      oom: match[3] === 'oom',
      naming: 'allot-lab',
    };
  }
  match = /^(\d+)_step_(\d+)\./.exec(name);
  if (match) return { rank: Number(match[1]), step: Number(match[2]), oom, naming: 'torchtitan' };
  match = /^rank(\d+)_memory_snapshot\./.exec(name);
  if (match) return { rank: Number(match[1]), step, oom, naming: 'torchtitan' };
  match = /_oom_rank-(\d+)\./.exec(name);
  if (match) return { rank: Number(match[1]), step, oom: true, naming: 'megatron' };
  match = /_rank-(\d+)\./.exec(name) ?? /^snapshot_(\d+)\./.exec(name);
  if (match) return { rank: Number(match[1]), step, oom, naming: 'megatron' };
  match = /rank[-_]?(\d+)/i.exec(name);
  if (match) return { rank: Number(match[1]), step, oom, naming: 'rank in the name' };
  return { rank: null, step, oom, naming: null };
}
