import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('importing @allot/cuda', () => {
  it.skipIf(process.platform !== 'linux')('loads no CUDA library and calls nothing', async () => {
    const pkg = await import('./index');
    expect(typeof pkg.isAvailable).toBe('function');
    const maps = readFileSync('/proc/self/maps', 'utf8');
    expect(maps).not.toMatch(/libcudart|libcuda\.so|libcudart-fake|libfakecuda/);
  });
});
