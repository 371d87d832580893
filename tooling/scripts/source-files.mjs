/**
 * What the repository's checks walk: the workspace's packages and apps, and the source files of
 * one (every .ts/.mts/.cts file below a folder, tests (`*.test.ts`) and declarations (`*.d.ts`)
 * left out).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Each folder of packages/ and apps/ below `root` that has a package.json, with its group. */
export function workspaceDirs(root) {
  return ['packages', 'apps'].flatMap((group) =>
    readdirSync(join(root, group))
      .map((name) => ({ group, name, dir: join(root, group, name) }))
      .filter(({ dir }) => existsSync(join(dir, 'package.json'))),
  );
}

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
