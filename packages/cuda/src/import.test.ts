import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

/** Whether koffi is loaded in this process: its module in Node's cache, or its add-on mapped. */
function koffiLoaded(): boolean {
  const cache = createRequire(import.meta.url).cache;
  const inCache = Object.keys(cache).some((path) => /[\\/]koffi[\\/]/.test(path));
  const mapped =
    process.platform === 'linux' &&
    /koffi[^\n]*\.node/.test(readFileSync('/proc/self/maps', 'utf8'));
  return inCache || mapped;
}

describe('importing @allot/cuda', () => {
  it.skipIf(process.platform !== 'linux')('loads no CUDA library and calls nothing', async () => {
    const pkg = await import('./index');
    expect(typeof pkg.isAvailable).toBe('function');
    const maps = readFileSync('/proc/self/maps', 'utf8');
    expect(maps).not.toMatch(/libcudart|libcuda\.so|libcudart-fake|libfakecuda/);
  });

  // vitest runs each test file in its own process (pool: 'forks'), so nothing else loaded koffi here.
  it('does not load koffi until CUDA is asked for', async () => {
    expect(koffiLoaded()).toBe(false);
    const pkg = await import('./index');
    expect(koffiLoaded()).toBe(false);
    // A bare name goes to the dynamic loader through koffi: the first use loads it.
    expect(pkg.isAvailable({ runtimePath: 'libcudart-that-does-not-exist.so' })).toBe(false);
    expect(koffiLoaded()).toBe(true);
  });
});
