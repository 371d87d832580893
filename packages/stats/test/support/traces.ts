/** Finds `../shared/traces` relative to the repository root, and reads malloc traces. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root: the nearest ancestor holding `pnpm-workspace.yaml`. */
export function repositoryRoot(): string {
  let dir = here;
  while (!existsSync(join(dir, 'pnpm-workspace.yaml'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('repository root not found');
    dir = parent;
  }
  return dir;
}

/** `../shared/traces` as seen from the repository root (it may be absent). */
export const TRACES_DIR = resolve(repositoryRoot(), '..', 'shared', 'traces');

/** Path of a file under the traces folder, or undefined when it is absent. */
export function tracePath(relative: string): string | undefined {
  const path = join(TRACES_DIR, relative);
  return existsSync(path) ? path : undefined;
}

export type MallocOp =
  | { readonly kind: 'alloc'; readonly size: number }
  | { readonly kind: 'free'; readonly index: number };

/** Parses the `Alloc(n),` / `Free(k),` format (k counts Alloc lines from 0). */
export function parseMallocTrace(text: string): MallocOp[] {
  const ops: MallocOp[] = [];
  for (const line of text.split('\n')) {
    const match = /^(Alloc|Free)\((\d+)\),?\s*$/.exec(line.trim());
    if (!match) continue;
    const n = Number(match[2]);
    ops.push(match[1] === 'Alloc' ? { kind: 'alloc', size: n } : { kind: 'free', index: n });
  }
  return ops;
}

export function readMallocTrace(path: string): MallocOp[] {
  return parseMallocTrace(readFileSync(path, 'utf8'));
}
