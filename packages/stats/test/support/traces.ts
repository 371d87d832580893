/** `../shared/traces`, found the way the bench and the lab find it, and paths under it. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { findTracesDir } from '@allot/workloads/node';

/** The traces folder, or a description of where it was looked for (for skip messages). */
export const TRACES_DIR = findTracesDir() ?? '../shared/traces';

/** Path of a file under the traces folder, or undefined when it is absent. */
export function tracePath(relative: string): string | undefined {
  const path = join(TRACES_DIR, relative);
  return existsSync(path) ? path : undefined;
}
