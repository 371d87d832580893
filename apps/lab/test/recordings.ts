/**
 * The recordings in `../shared/traces` that the lab's answers are checked on across the board: every
 * file of the H100 runs and of the public folder that is a recording (not a README, a script or the
 * runs' own figures), in name order.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Folders of `../shared/traces` whose recordings the checks read. */
export const RECORDING_FOLDERS = ['pytorch-h100', 'public'] as const;

/** Files that describe recordings rather than hold one. */
const NOT_A_RECORDING = /\.(?:md|txt|py|jsonl)$/;

/** The recordings under `shared` (the traces folder), as paths. */
export function recordingsToTune(shared: string): string[] {
  return RECORDING_FOLDERS.flatMap((folder) => {
    const dir = join(shared, folder);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => !NOT_A_RECORDING.test(name))
      .sort()
      .map((name) => join(dir, name));
  });
}
