// The one tsup setup for every published package: ESM and CJS, declarations, source maps.
// minifySyntax inlines module-level numeric constants (field offsets, record layouts) into hot
// paths: Node 20's V8 does not fold a module-level `const` and would load and check it on every
// allocate and free. Identifiers and whitespace stay as written, so stack traces still read.
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
    minifySyntax: true,
    ...overrides,
  });
}
