/**
 * The stress workers import the built package (`dist/index.js`): build it first when it is missing
 * or older than a source file, so `vitest run` works on a fresh checkout too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (!entry.name.endsWith('.test.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

export default function setup(): void {
  const built = join(root, 'dist', 'index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newestSource(join(root, 'src'))) return;
  execFileSync('pnpm', ['exec', 'tsup', '--silent'], { cwd: root, stdio: 'inherit' });
}
