// What a package's entry point needs at run time: the packages that the modules reachable from it
// import (`import type` excluded), following relative imports through the source. Tests use it to
// prove that an entry does not pull in an optional peer (`@allot/cuda` without `@allot/caching`).
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';

const builtins = new Set(builtinModules);

/** Packages (Node built-ins left out) imported at run time from `entry` and what it reaches. */
export function runtimeImports(entry) {
  const packages = new Set();
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/^(?:import|export)\s+([^'";]*?)\s*from\s+'([^']+)'/gm)) {
      const [, clause, specifier] = match;
      if (/^type\s/.test(clause)) continue;
      if (specifier.startsWith('.')) visit(join(dirname(file), `${specifier}.ts`));
      else if (!builtins.has(specifier.replace(/^node:/, ''))) packages.add(specifier);
    }
  };
  visit(entry);
  return [...packages].sort();
}
