/** Runs python3 when it exists (the pickle checks fall back to `unpickle` of @allot/pickle). */
import { spawnSync } from 'node:child_process';

export const hasPython = spawnSync('python3', ['--version']).status === 0;

/** Runs `python3 -c code ...args`; returns stdout, throws with stderr on failure. */
export function python(code: string, ...args: string[]): string {
  const result = spawnSync('python3', ['-c', code, ...args], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`python3 failed: ${result.stderr}`);
  return result.stdout;
}
