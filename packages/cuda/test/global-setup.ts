/**
 * Compiles the fake CUDA library (test/fake/fake-cuda.c) with gcc into `.tmp/` (ignored by git) and
 * hands its path to the test workers through ALLOT_FAKE_CUDA_LIBRARY. Per-test copies land in
 * `.tmp/copies/` and are removed afterwards.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
export const FAKE_SOURCE = join(root, 'test', 'fake', 'fake-cuda.c');
export const FAKE_DIR = join(root, '.tmp');
export const FAKE_LIBRARY = join(FAKE_DIR, 'libfakecuda.so');

export function buildFake(): string {
  mkdirSync(FAKE_DIR, { recursive: true });
  let stale = true;
  try {
    stale = statSync(FAKE_LIBRARY).mtimeMs < statSync(FAKE_SOURCE).mtimeMs;
  } catch {}
  if (stale) {
    try {
      execFileSync(
        process.env.CC ?? 'gcc',
        [
          '-shared',
          '-fPIC',
          '-O2',
          '-Wall',
          '-Wextra',
          '-Werror',
          '-fvisibility=hidden',
          '-o',
          FAKE_LIBRARY,
          FAKE_SOURCE,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
    } catch (error) {
      const e = error as { stderr?: Buffer; message: string };
      throw new Error(
        `Could not compile the fake CUDA library with gcc (set CC to use another compiler):\n${e.stderr?.toString() ?? e.message}`,
      );
    }
  }
  return FAKE_LIBRARY;
}

export default function setup(): () => void {
  process.env.ALLOT_FAKE_CUDA_LIBRARY = buildFake();
  return () => rmSync(join(FAKE_DIR, 'copies'), { recursive: true, force: true });
}
