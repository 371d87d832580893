/**
 * Finds the snapshot files that have landed in a folder, complete, by polling: `fs.watch` is not
 * told of files another machine writes on a network file system (NFS, Lustre, GPFS), which is where
 * a job of many nodes writes, so the folder is listed again every few seconds instead.
 *
 * ```
 *  list the folder (6 folders deep, names *.pickle, *.pkl, each also .gz; a name under way such as
 *  NAME.pickle.tmp is no snapshot's) ─► size and modification time of each
 *  complete: seen twice in a row with the same size and time (a file renamed into place when
 *  written, as the recorder does, and one written in place, as torchtitan does), not empty
 *  a file that changes after it was read is read again
 * ```
 */
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { dumpOrder, nameOf, oomStepOf } from '../job/rank-name';
import type { FoundDump } from './watched-job';

/** How deep the folder is searched, as a job's folder is (job/layout.ts). */
const MAX_DEPTH = 6;

/** Names the watch reads: pickled snapshots, gzipped or not. */
const SNAPSHOT_NAME = /\.(pickle|pkl)(\.gz)?$/i;

interface Seen {
  readonly size: number;
  readonly mtimeMs: number;
}

function sameFile(a: Seen | undefined, b: Seen): boolean {
  return a !== undefined && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

/** The snapshot files under `folder`, with their sizes and times. */
async function listFiles(folder: string, depth = 0, out = new Map<string, Seen>()) {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch {
    return out; // a folder removed while listed, or not readable: nothing there
  }
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const path = join(folder, entry.name);
    if (entry.isDirectory()) {
      if (depth + 1 < MAX_DEPTH) await listFiles(path, depth + 1, out);
      continue;
    }
    if (!SNAPSHOT_NAME.test(entry.name)) continue;
    try {
      const info = await stat(path);
      if (info.isFile()) out.set(path, { size: info.size, mtimeMs: info.mtimeMs });
    } catch {
      // Renamed or removed between the listing and now.
    }
  }
  return out;
}

/** Which of a folder's files are complete and not yet read (see the module comment). */
export class FolderPoll {
  private last = new Map<string, Seen>();
  private readonly read = new Map<string, Seen>();

  constructor(readonly root: string) {}

  /**
   * The files complete since the last call, in the order ranks wrote them (`dumpOrder`: by the
   * process's restart, by step, then the dump at the step, the OOM dump and the dump at exit), then
   * by rank, then time. With `settled`, a file counts as complete at once (`--once`:
   * the job is over).
   */
  async poll(settled = false): Promise<FoundDump[]> {
    const now = await listFiles(this.root);
    const ready: (FoundDump & { mtimeMs: number })[] = [];
    for (const [path, seen] of now) {
      if (seen.size === 0 || sameFile(this.read.get(path), seen)) continue;
      if (!settled && !sameFile(this.last.get(path), seen)) continue;
      this.read.set(path, seen);
      const file = relative(this.root, path);
      const named = nameOf(file);
      ready.push({
        path,
        file,
        rank: named.rank ?? 0,
        step: named.step,
        oom: named.oom,
        ...(named.exit ? { exit: true } : {}),
        ...(named.restart ? { restart: named.restart } : {}),
        ...(named.oom ? { oomStep: oomStepOf(named) } : {}),
        mtimeMs: seen.mtimeMs,
      });
    }
    this.last = now;
    return ready
      .sort((a, b) => dumpOrder(a, b) || a.rank - b.rank || a.mtimeMs - b.mtimeMs)
      .map(({ mtimeMs: _, ...found }) => found);
  }
}
