// The one tsup setup for every published package: ESM and CJS, declarations, source maps.
import { defineConfig } from 'tsup';

/** @param {import('tsup').Options} [overrides] */
export function libraryConfig(overrides = {}) {
  return defineConfig({
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    platform: 'node',
    splitting: false,
    treeshake: true,
    ...overrides,
  });
}
