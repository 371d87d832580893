#!/usr/bin/env node
/**
 * Layers inside a package or app: where one has a `layers.json` beside its package.json (the lab
 * does), every relative import of its source files under src/ (type-only ones too, tests left out)
 * must point to a module of the same layer or a lower one. An import that runs back up is printed
 * with both layers and fails the check.
 *
 * `layers.json`: `{ "layers": [{ "name", "files": [...] }, ...] }`, lowest first. A file belongs to
 * the first layer with a pattern that matches its path under src/: the path itself, a folder
 * followed by `/**`, or `**` for every file left.
 *
 * Usage: node tooling/scripts/check-layers.mjs   (part of `pnpm lint`)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { importsOf } from './imports.mjs';
import { sourceFiles, workspaceDirs } from './source-files.mjs';

const root = join(import.meta.dirname, '..', '..');

/** The index of the layer `path` (relative to src/, with `/`) belongs to, or -1. */
export function layerOf(layers, path) {
  return layers.findIndex(({ files }) =>
    files.some((pattern) =>
      pattern === '**'
        ? true
        : pattern.endsWith('/**')
          ? path.startsWith(pattern.slice(0, -2))
          : path === pattern,
    ),
  );
}

/** The imports of `dir`'s source files that run back up its layers, as lines. */
export function upwardImports(dir, layers) {
  const src = join(dir, 'src');
  const problems = [];
  const where = (file) => relative(src, file).split('\\').join('/');
  for (const file of sourceFiles(src)) {
    const from = layerOf(layers, where(file));
    if (from < 0) {
      problems.push(`${where(file)}: in no layer`);
      continue;
    }
    for (const target of importsOf(file)) {
      const to = layerOf(layers, where(target));
      if (to > from) {
        problems.push(
          `${where(file)} (${layers[from].name}) imports ${where(target)} (${layers[to].name})`,
        );
      }
    }
  }
  return problems;
}

if (import.meta.main ?? process.argv[1] === import.meta.filename) {
  const problems = [];
  let checked = 0;
  for (const { group, name, dir } of workspaceDirs(root)) {
    const config = join(dir, 'layers.json');
    if (!existsSync(config)) continue;
    checked++;
    const { layers } = JSON.parse(readFileSync(config, 'utf8'));
    for (const problem of upwardImports(dir, layers)) problems.push(`${group}/${name}: ${problem}`);
  }
  if (problems.length > 0) {
    console.error(`imports back up a layer (${problems.length}):\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`check-layers: ${checked} layered app(s), every import points down or across`);
}
