#!/usr/bin/env node
/**
 * Import cycles inside a package or app: every relative import (type-only ones too) of the source
 * files under packages/NAME/src and apps/NAME/src, tests left out, as a graph per package; any
 * cycle is printed as a path and fails the check. Packages themselves form no cycle either: their
 * package.json dependencies must be acyclic.
 *
 * Usage: node tooling/scripts/check-cycles.mjs   (part of `pnpm lint`)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { importsOf } from './imports.mjs';
import { sourceFiles, workspaceDirs } from './source-files.mjs';

const root = join(import.meta.dirname, '..', '..');

/** Cycles of a graph (Tarjan-free: a DFS that reports each back edge's path once). */
function cyclesOf(graph) {
  const cycles = [];
  const state = new Map(); // 1 on the stack, 2 done
  const stack = [];
  const visit = (node) => {
    state.set(node, 1);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 1) cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 2);
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

const problems = [];
const manifests = new Map();
for (const { dir } of workspaceDirs(root)) {
  const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  manifests.set(json.name, json);
  const src = join(dir, 'src');
  if (!existsSync(src)) continue;
  const graph = new Map();
  for (const file of sourceFiles(src)) graph.set(file, importsOf(file));
  for (const cycle of cyclesOf(graph)) {
    problems.push(`${json.name}: ${cycle.map((f) => relative(dir, f)).join(' → ')}`);
  }
}
const packageGraph = new Map(
  [...manifests].map(([name, json]) => [
    name,
    new Set(
      Object.keys({ ...json.dependencies, ...json.peerDependencies }).filter((dep) =>
        manifests.has(dep),
      ),
    ),
  ]),
);
for (const cycle of cyclesOf(packageGraph)) problems.push(`packages: ${cycle.join(' → ')}`);

if (problems.length > 0) {
  console.error(`import cycles (${problems.length}):\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(`no import cycles in ${manifests.size} packages and apps`);
