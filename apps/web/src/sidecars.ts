/**
 * Files given at once, as the engine opens them:
 *
 * - each trace with the sidecar `allot-lab record` wrote beside it (`rank1_step12_oom.json` beside
 *   `rank1_step12_oom.pickle`: the card and the per-process fraction, which decide the wall of an
 *   out-of-memory error), when it was given too; a sidecar is never opened as a trace of its own;
 * - of a folder `allot-lab record` wrote (a dump every few steps of every rank), each rank's
 *   newest dump, as `replay DIR` reads it: the folder is then a job of one file per rank.
 */
import { isTraceName, nameOf, newestOfEachRank, sidecarPath } from '@allot/lab/engine';

/** A file's path in the folder it was given with, else its name. */
export const pathOf = (file: File): string => file.webkitRelativePath || file.name;

/** A trace to open, and its sidecar when one was given. */
export interface GivenTrace {
  readonly file: File;
  readonly sidecar?: File;
}

/** The traces among `given` (a folder's: those with a trace's name), each with its sidecar. */
export function tracesWithSidecars(given: readonly File[], folder: boolean): GivenTrace[] {
  const byPath = new Map(given.map((file) => [pathOf(file), file]));
  const sidecarOf = new Map<File, File>();
  for (const file of given) {
    const path = sidecarPath(pathOf(file));
    const sidecar = path === null ? undefined : byPath.get(path);
    if (sidecar !== undefined) sidecarOf.set(file, sidecar);
  }
  const sidecars = new Set(sidecarOf.values());
  const traces = given
    .filter((file) => !sidecars.has(file) && (!folder || isTraceName(file.name)))
    .map((file) => {
      const sidecar = sidecarOf.get(file);
      return sidecar === undefined ? { file } : { file, sidecar };
    });
  return folder ? newestOfRecord(traces) : traces;
}

/** Of a folder `record` wrote, each rank's newest dump; any other folder as it is. */
function newestOfRecord(traces: readonly GivenTrace[]): GivenTrace[] {
  const named = traces.map((trace) => ({ ...nameOf(pathOf(trace.file)), trace }));
  const ranks = new Set(named.map((file) => file.rank));
  if (ranks.size === named.length || !named.every((file) => file.naming === 'allot-lab')) {
    return [...traces];
  }
  return newestOfEachRank(named, [])
    .chosen.sort((a, b) => a.rank! - b.rank!)
    .map((file) => file.trace);
}
