import { join } from 'node:path';
import { runtimeImports } from '@allot/tooling/entry-graph';
import { describe, expect, it } from 'vitest';

describe('the entry points of @allot/numa', () => {
  it('the main entry needs only @allot/core at run time (koffi is required on first use)', () => {
    expect(runtimeImports(join(import.meta.dirname, 'index.ts'))).toEqual(['@allot/core']);
  });

  it('the caching entry adds @allot/caching, its optional peer', () => {
    expect(runtimeImports(join(import.meta.dirname, 'caching.ts'))).toEqual([
      '@allot/caching',
      '@allot/core',
    ]);
  });
});
