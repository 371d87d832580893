/**
 * Files given at once, as the engine opens them: the traces, each with the sidecar `allot-lab
 * record` wrote beside it (`rank1_step12_oom.json` beside `rank1_step12_oom.pickle`: the card and
 * the per-process fraction, which decide the wall of an out-of-memory error) when it was given too.
 * A sidecar is never opened as a trace of its own.
 */
import { isTraceName, sidecarPath } from '@allot/lab/engine';

/** A file's path in the folder it was given with, else its name. */
export const pathOf = (file: File): string => file.webkitRelativePath || file.name;

/** The traces among `given` (a folder's: those with a trace's name), each with its sidecar. */
export function tracesWithSidecars(
  given: readonly File[],
  folder: boolean,
): { file: File; sidecar?: File }[] {
  const byPath = new Map(given.map((file) => [pathOf(file), file]));
  const sidecarOf = (file: File): File | undefined => {
    const path = sidecarPath(pathOf(file));
    return path === null ? undefined : byPath.get(path);
  };
  const sidecars = new Set(given.map(sidecarOf).filter((file) => file !== undefined));
  return given
    .filter((file) => !sidecars.has(file) && (!folder || isTraceName(file.name)))
    .map((file) => {
      const sidecar = sidecarOf(file);
      return sidecar === undefined ? { file } : { file, sidecar };
    });
}
