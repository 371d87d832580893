/**
 * The relative imports of a source file (check-cycles, check-layers): every `import`, `export ...
 * from` and `import()` whose specifier starts with a dot (type-only ones too), resolved to the
 * files they name; tests (`*.test.ts`) and what resolves to no file are left out.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"](\.[^'"]+)['"]|import\s*\(?\s*['"](\.[^'"]+)['"]/g;

/** The file `specifier` names from `from`, or null. */
function resolveImport(from, specifier) {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [
    base,
    `${base}.ts`,
    base.replace(/\.js$/, '.ts'),
    join(base, 'index.ts'),
  ]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

/** The files `file` imports relatively (see the module comment), each once. */
export function importsOf(file) {
  const edges = new Set();
  for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const target = resolveImport(file, match[1] ?? match[2]);
    if (target !== null && !/\.test\.ts$/.test(target)) edges.add(target);
  }
  return edges;
}
