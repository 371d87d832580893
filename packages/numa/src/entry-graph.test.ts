import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Packages that the modules reachable from `entry` import at run time (`import type` excluded),
 * following relative imports through the source.
 */
function runtimeImports(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/^(?:import|export)\s+([^'";]*?)\s*from\s+'([^']+)'/gm)) {
      const [, clause, specifier] = match as unknown as [string, string, string];
      if (/^type\s/.test(clause)) continue;
      if (specifier.startsWith('.')) visit(join(dirname(file), `${specifier}.ts`));
      else packages.add(specifier.replace(/^node:/, ''));
    }
  };
  visit(entry);
  return packages;
}

const builtins = new Set(builtinModules);

describe('the entry points of @allot/numa', () => {
  it('the main entry needs only @allot/core at run time (koffi is required on first use)', () => {
    const used = [...runtimeImports(join(import.meta.dirname, 'index.ts'))];
    expect(used.filter((name) => !builtins.has(name))).toEqual(['@allot/core']);
  });

  it('the caching entry adds @allot/caching, its optional peer', () => {
    const used = [...runtimeImports(join(import.meta.dirname, 'caching.ts'))];
    expect(used.filter((name) => !builtins.has(name)).sort()).toEqual([
      '@allot/caching',
      '@allot/core',
    ]);
  });
});
