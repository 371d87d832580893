/**
 * A job's input: the snapshot of each rank, found in a folder, a glob or a list of files, with its
 * rank number read from the name the framework gave it, and one step chosen among several: the
 * newest of the job (or --step N) where the framework counts steps for the whole job, each rank's
 * newest where `record` counted them per process.
 *
 * ```
 *  DIR | GLOB | FILE... ─► trace files ─► rank and step from each name ─► one step (newest, or --step)
 *                                        allot-lab    rankR_stepN[_exit|_oom].pickle (`record`)
 *                                        torchtitan   iteration_N[_exit]/rankR_memory_snapshot.pickle
 *                                                     step_N/RRRRRR_step_N.pickle
 *                                        Megatron     snapshot_R.pickle, NAME_rank-R.pickle,
 *                                                     NAME_oom_rank-R.pickle (an OOM snapshot)
 *                                        otherwise    rankR anywhere in the name, else sorted order
 *
 *  which step   allot-lab, no --step: each rank's newest snapshot (of one step: _oom, then _exit)
 *               otherwise, or --step N: the newest step of the job (or N); its regular snapshots over
 *               its OOM ones; of a rank's snapshot and its exit one at a step, the exit one
 * ```
 *
 * When is an input a job? A folder or a glob always is. Several files are one for `tune` (which
 * tunes one trace otherwise), and for `replay` when every name gives a different rank; other files
 * given to `replay` stay separate workloads, as before jobs existed.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { UsageError } from '../options';
import { expandGlob, isGlob } from './glob';
import { isTraceName, type Named, nameOf, newestOfEachRank, type RankNaming } from './rank-name';

export { nameOf, type RankNaming } from './rank-name';

/** One rank's trace file. */
export interface RankFile {
  readonly rank: number;
  /** The path as the output names it: relative to the current folder when under it. */
  readonly file: string;
  readonly path: string;
  readonly bytes: number;
  readonly step: number | null;
  /** Written when the program ran out of memory (torchtitan's `_exit` folder, Megatron's `_oom_`). */
  readonly oom: boolean;
}

/** The ranks of a job, and how they were found. */
export interface JobInput {
  readonly ranks: readonly RankFile[];
  readonly naming: RankNaming;
  /**
   * The step read, or null when the names state none, or when each rank was read at its own newest
   * step and those differ (`record`'s names; the notes say which).
   */
  readonly step: number | null;
  /** Every step the input holds, ascending. */
  readonly steps: readonly number[];
  /** What was left out, for a person (other steps, OOM snapshots). */
  readonly notes: readonly string[];
}

/** How deep a folder is searched for traces. */
export const MAX_DEPTH = 6;

/** What a folder is searched for, in words (the message when it holds none). */
export const LOOKED_FOR =
  `*.pickle, *.pkl, *trace*.json and *snapshot*.json (each also .gz), up to ${MAX_DEPTH} folders deep, ` +
  "such as torchtitan's memory_snapshot/iteration_N/rankR_memory_snapshot.pickle or " +
  "Megatron-Bridge's snapshot_R.pickle";

/** The trace files under `folder` (absolute paths, sorted). */
function traceFilesUnder(folder: string, depth = 0): string[] {
  const found: string[] = [];
  const entries = readdirSync(folder, { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name, 'en', { numeric: true }),
  );
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const path = resolve(folder, entry.name);
    let isFolder = entry.isDirectory();
    let isFile = entry.isFile();
    if (entry.isSymbolicLink()) {
      const target = statSync(path, { throwIfNoEntry: false });
      isFolder = target?.isDirectory() ?? false;
      isFile = target?.isFile() ?? false;
    }
    if (isFolder && depth + 1 < MAX_DEPTH) found.push(...traceFilesUnder(path, depth + 1));
    else if (isFile && isTraceName(entry.name)) found.push(path);
  }
  return found;
}

/** A path as the output shows it: relative to `cwd` when under it. */
function shown(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/**
 * Whether `files` (the command's positional arguments) make a job for `command` (see the module
 * comment): false leaves them to the one-file commands.
 */
export function isJob(
  command: string,
  files: readonly string[],
  cwd: string,
  forced: boolean,
): boolean {
  if (command !== 'replay' && command !== 'tune') return false;
  if (files.length === 0) return false;
  if (forced) return true;
  for (const file of files) {
    const path = resolve(cwd, file);
    if (existsSync(path) ? statSync(path).isDirectory() : isGlob(file)) return true;
  }
  if (files.length === 1) return false;
  if (command === 'tune') return true;
  const ranks = files.map((file) => nameOf(file).rank);
  return ranks.every((rank) => rank !== null) && new Set(ranks).size === ranks.length;
}

/** Every trace file the positional arguments name (absolute paths). */
function expand(files: readonly string[], cwd: string): string[] {
  const found: string[] = [];
  for (const file of files) {
    const path = resolve(cwd, file);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) {
      const under = traceFilesUnder(path);
      if (under.length === 0) {
        throw new UsageError(`${file} holds no trace files: looked for ${LOOKED_FOR}`);
      }
      found.push(...under);
    } else if (stat === undefined && isGlob(file)) {
      const matched = expandGlob(file, cwd).filter(
        (match) => statSync(match, { throwIfNoEntry: false })?.isFile() ?? false,
      );
      if (matched.length === 0) throw new UsageError(`${file} matches no file`);
      found.push(...matched);
    } else {
      if (stat === undefined)
        throw new UsageError(`cannot read ${file}: no such file or folder (ENOENT)`);
      found.push(path);
    }
  }
  return found;
}

/** A trace file found, with what its name says. */
type Found = Named & { readonly path: string };

/** The ranks of the job `files` name (see the module comment). @throws UsageError */
export function findRanks(
  files: readonly string[],
  cwd: string,
  wantedStep: number | null,
): JobInput {
  const all: Found[] = [...new Set(expand(files, cwd))].map((path) => ({ path, ...nameOf(path) }));
  const steps = [...new Set(all.map((file) => file.step).filter((step) => step !== null))].sort(
    (a, b) => a - b,
  );
  const notes: string[] = [];
  const { chosen, step } =
    wantedStep === null && all.length > 0 && all.every((file) => file.naming === 'allot-lab')
      ? newestOfEachRank(all, notes)
      : oneStep(all, steps, wantedStep, files, notes);
  const named = chosen.every((file) => file.rank !== null);
  let naming: RankNaming = 'sorted order';
  let ranks: RankFile[];
  const fileOf = (path: string) => ({
    file: shown(path, cwd),
    path,
    bytes: statSync(path).size,
  });
  if (named) {
    const namings = new Set(chosen.map((file) => file.naming));
    naming = namings.size === 1 ? chosen[0]!.naming! : 'rank in the name';
    ranks = chosen.map((file) => ({
      rank: file.rank!,
      step: file.step,
      oom: file.oom,
      ...fileOf(file.path),
    }));
  } else {
    chosen.sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
    ranks = chosen.map((file, i) => ({
      rank: i,
      step: file.step,
      oom: file.oom,
      ...fileOf(file.path),
    }));
    if (chosen.length > 1) notes.push('ranks numbered in sorted order: the names state none');
  }
  ranks.sort((a, b) => a.rank - b.rank);
  for (let i = 1; i < ranks.length; i++) {
    if (ranks[i]!.rank === ranks[i - 1]!.rank) {
      throw new UsageError(
        `rank ${ranks[i]!.rank} has two traces, ${ranks[i - 1]!.file} and ${ranks[i]!.file}: name the files of one run`,
      );
    }
  }
  return { ranks, naming, step, steps, notes };
}

/** The files to read and their step: one step of every rank (the newest, or --step N). */
function oneStep(
  all: readonly Found[],
  steps: readonly number[],
  wantedStep: number | null,
  files: readonly string[],
  notes: string[],
): { chosen: Found[]; step: number | null } {
  let step: number | null = null;
  if (wantedStep !== null) {
    if (!steps.includes(wantedStep)) {
      throw new UsageError(
        `--step ${wantedStep}: ${files.join(', ')} holds no snapshots of that step ` +
          `(${steps.length > 0 ? `it holds steps ${steps.join(', ')}` : 'its names state no step'})`,
      );
    }
    step = wantedStep;
  } else if (steps.length > 0) {
    step = steps.at(-1)!;
    if (steps.length > 1) {
      notes.push(`step ${step}, the newest of steps ${steps.join(', ')} (--step N reads another)`);
    }
  }
  let chosen = step === null ? [...all] : all.filter((file) => file.step === step);
  const unstepped = all.filter((file) => file.step === null).length;
  if (step !== null && unstepped > 0) {
    notes.push(`${unstepped} files whose path states no step left out`);
  }
  const regular = chosen.filter((file) => !file.oom);
  if (regular.length > 0 && regular.length < chosen.length) {
    notes.push(
      `${chosen.length - regular.length} out-of-memory snapshots left out (name them alone to read them)`,
    );
    chosen = regular;
  }
  return { chosen: exitOverStep(latestRestart(chosen)), step };
}

/** Of each rank's files, those of its latest restart (`record` counts steps per process). */
function latestRestart<T extends { rank: number | null; restart?: number }>(
  files: readonly T[],
): T[] {
  const latest = new Map<number | null, number>();
  for (const file of files) {
    latest.set(file.rank, Math.max(latest.get(file.rank) ?? 0, file.restart ?? 0));
  }
  return files.filter((file) => (file.restart ?? 0) === latest.get(file.rank));
}

/**
 * `record` dumps a rank at a step and, when the program ends at that step, at exit too: of the two
 * snapshots of one rank and step, the exit one is read (it holds the later state).
 */
function exitOverStep<T extends Named>(files: readonly T[]): T[] {
  // `exit` is set for `record`'s names only (`nameOf`).
  const exits = new Set(files.filter((file) => file.exit).map((file) => file.rank));
  return files.filter(
    (file) => file.naming !== 'allot-lab' || !exits.has(file.rank) || file.exit === true,
  );
}

/** The share of `ranks` that `--shard I/N` gives this run: the I-th of N runs of consecutive ranks. */
export function shardOf<T>(
  ranks: readonly T[],
  shard: { index: number; count: number } | null,
): T[] {
  if (shard === null) return [...ranks];
  const from = Math.floor((shard.index * ranks.length) / shard.count);
  const to = Math.floor(((shard.index + 1) * ranks.length) / shard.count);
  return ranks.slice(from, to);
}
