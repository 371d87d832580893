/**
 * The source files the repository checks (check-cycles, check-sizes): every .ts/.mts/.cts file
 * below a folder, tests (`*.test.ts`) and declarations (`*.d.ts`) left out.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Source files below `dir`, depth first. */
export function sourceFiles(dir) {
  const files = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (/\.(ts|mts|cts)$/.test(name) && !/\.test\.ts$|\.d\.ts$/.test(name)) files.push(path);
  }
  return files;
}
