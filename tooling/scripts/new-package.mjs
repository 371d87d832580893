#!/usr/bin/env node
// Scaffolds a package with the one allot anatomy: node tooling/scripts/new-package.mjs <dir> "<description>" [dep ...]
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, description, ...deps] = process.argv.slice(2);
if (!dir || !description) {
  console.error('usage: new-package.mjs <dir under packages/> "<description>" [@allot/dep ...]');
  process.exit(2);
}
const root = join(import.meta.dirname, '..', '..', 'packages', dir);
if (existsSync(join(root, 'package.json'))) {
  console.error(`packages/${dir} exists already`);
  process.exit(1);
}
mkdirSync(join(root, 'src'), { recursive: true });
mkdirSync(join(root, 'bench'), { recursive: true });
const pkg = {
  name: `@allot/${dir}`,
  version: '0.1.0',
  description,
  license: 'MIT',
  keywords: ['allocator', 'memory'],
  type: 'module',
  sideEffects: false,
  engines: { node: '>=20' },
  main: './dist/index.cjs',
  module: './dist/index.js',
  types: './dist/index.d.ts',
  exports: {
    '.': {
      import: { types: './dist/index.d.ts', default: './dist/index.js' },
      require: { types: './dist/index.d.cts', default: './dist/index.cjs' },
    },
    './package.json': './package.json',
  },
  files: ['dist'],
  scripts: {
    build: 'tsup',
    typecheck: 'tsc -p tsconfig.json',
    lint: 'biome check .',
    test: 'vitest run',
    fuzz: 'ALLOT_FUZZ=1 vitest run prop --passWithNoTests',
  },
  dependencies: Object.fromEntries(deps.map((d) => [d, 'workspace:*'])),
  devDependencies: { '@allot/testkit': 'workspace:*', '@allot/tooling': 'workspace:*' },
};
writeFileSync(join(root, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
writeFileSync(
  join(root, 'tsconfig.json'),
  '{ "extends": "@allot/tooling/tsconfig.base.json", "include": ["src", "bench", "*.ts"] }\n',
);
writeFileSync(
  join(root, 'tsup.config.ts'),
  "import { libraryConfig } from '@allot/tooling/tsup';\n\nexport default libraryConfig();\n",
);
writeFileSync(join(root, 'vitest.config.ts'), "export { default } from '@allot/tooling/vitest';\n");
writeFileSync(join(root, 'src', 'index.ts'), '');
writeFileSync(join(root, 'README.md'), `# @allot/${dir}\n\n${description}\n`);
console.log(`created packages/${dir}`);
