/** A job's rank snapshots in a temporary folder, for the tests of `replay DIR` and `tune DIR`. */
import { existsSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The real H100 snapshots (see its README); absent outside the project's machines. */
export const H100 = join(here, '..', '..', '..', '..', 'shared', 'traces', 'pytorch-h100');
export const TRAIN = join(H100, 'train-default.pickle.gz');
export const INFER = join(H100, 'infer-default.pickle.gz');
export const TRAIN_EXPANDABLE = join(H100, 'train-expandable_segments-True.pickle.gz');
export const H100_PRESENT = existsSync(TRAIN) && existsSync(INFER) && existsSync(TRAIN_EXPANDABLE);

/**
 * A torchtitan snapshot folder in a new temporary folder: memory_snapshot/step_N/RRRRRR_step_N.pickle.gz,
 * a link to `files[R]`. Returns the temporary folder.
 */
export function torchtitanJob(files: readonly string[], step = 10): string {
  const root = mkdtempSync(join(tmpdir(), 'allot-job-'));
  const folder = join(root, 'memory_snapshot', `step_${step}`);
  mkdirSync(folder, { recursive: true });
  files.forEach((file, rank) => {
    symlinkSync(file, join(folder, `${String(rank).padStart(6, '0')}_step_${step}.pickle.gz`));
  });
  return root;
}
