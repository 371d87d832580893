// Builds the fake CUDA library (test/fake/fake-cuda.c) into .tmp/ for the benchmarks, as the test
// setup does, and returns its path.
import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export function buildFake() {
  const root = join(import.meta.dirname, '..');
  const source = join(root, 'test', 'fake', 'fake-cuda.c');
  const library = join(root, '.tmp', 'libfakecuda.so');
  mkdirSync(join(root, '.tmp'), { recursive: true });
  let stale = true;
  try {
    stale = statSync(library).mtimeMs < statSync(source).mtimeMs;
  } catch {}
  if (stale) {
    execFileSync(
      process.env.CC ?? 'gcc',
      ['-shared', '-fPIC', '-O2', '-fvisibility=hidden', '-o', library, source],
      {
        stdio: 'inherit',
      },
    );
  }
  return library;
}
